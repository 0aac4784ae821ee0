/** The database itself: migrations, SQLite backups, and the derived order tables. */
import { backupSqlite } from '../db/backup.ts';
import { rebuildOrderProjections } from '../orders/read-model/index.ts';
import { CLI } from '../write/runner.ts';
import { rebuildShipmentCounts } from '../fulfilment/shipment-counts.ts';
import { rebuildShippedQuantities } from '../fulfilment/shipped-quantities.ts';
import { CliError, printLines, requireBusiness, type Command } from './command.ts';

export const databaseCommands: Record<string, Command> = {
  'projections rebuild': {
    usage:
      'projections rebuild --business ID      rebuild the derived tables of a business (counts, property index, shipped quantities)',
    options: { business: { type: 'string' } },
    required: ['business'],
    async run({ db, writes }, values) {
      const businessId = await requireBusiness(db, String(values.business));
      const started = performance.now();
      await writes.run({ businessId, actor: CLI }, (ctx) =>
        rebuildOrderProjections(ctx.trx, businessId, (done) => {
          if (done % 50_000 === 0) process.stderr.write(`${done.toLocaleString('en')} live orders indexed\n`);
        }),
      );
      await writes.run({ businessId, actor: CLI }, async (ctx) => {
        await rebuildShipmentCounts(ctx.trx, businessId);
        await rebuildShippedQuantities(ctx.trx, businessId);
      });
      printLines(
        `Rebuilt the order projections of ${businessId} in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
      );
    },
  },
  backup: {
    usage:
      'backup FILE                            an online backup of a SQLite database to FILE (PostgreSQL: pg_dump, docs/operations.md)',
    options: {},
    required: [],
    positional: 'FILE',
    async alone(describe, [file]) {
      if (!describe.startsWith('sqlite:')) {
        throw new CliError(
          'backup copies SQLite databases; for PostgreSQL use pg_dump --format=custom (docs/operations.md, "Backups")',
        );
      }
      const started = Date.now();
      let shown = -1;
      const progress = (copied: number, total: number) => {
        const percent = Math.floor((copied / Math.max(1, total)) * 100);
        if (percent < shown + 10 && copied < total) return;
        shown = percent;
        process.stderr.write(`${percent}%  ${copied.toLocaleString('en')}/${total.toLocaleString('en')} pages\n`);
      };
      const { pages } = await backupSqlite(describe.slice('sqlite:'.length), file, progress);
      // A small database is copied in one step, which reports nothing.
      if (shown < 100) progress(pages, pages);
      printLines(
        `Backed up ${describe} to ${file} (${pages.toLocaleString('en')} pages, ${((Date.now() - started) / 1000).toFixed(1)} s).`,
        `Restore: stop the servers, copy ${file} over the database file (and remove its -wal and -shm files), start them.`,
      );
    },
  },
  migrate: {
    creates: true,
    usage: 'migrate                                apply pending database migrations',
    options: {},
    required: [],
    async run({ describe }, _values, applied) {
      if (applied.length === 0) return printLines(`Database is up to date (${describe}).`);
      printLines(`Applied ${applied.length} migration(s) to ${describe}:`, ...applied.map((name) => `  ${name}`));
    },
  },
};
