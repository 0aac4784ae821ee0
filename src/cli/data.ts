/** Data loaded from the command line: the demo business, and import files. */
import { loadConfig } from '../config.ts';
import { DEMO_OPTIONS, runDemoCommand } from '../demo/command.ts';
import { runImportCommand } from '../imports/command.ts';
import { asCliError, printLines, requireBusiness, UsageError, type Command } from './command.ts';

export const dataCommands: Record<string, Command> = {
  demo: {
    creates: true,
    usage:
      'demo [--orders N] [--items M] [--buyers K] [--json]  create a business full of demo data (default 300 orders, 40 items, 20 buyers)',
    options: DEMO_OPTIONS,
    required: [],
    run: ({ db }, values) => runDemoCommand(db, values, (message) => new UsageError(message)),
  },
  import: {
    usage:
      'import FILE --business ID [--dry-run] [--stop-on-error]   apply an NDJSON import file (README, "Bulk import"), with progress',
    options: { business: { type: 'string' }, 'dry-run': { type: 'boolean' }, 'stop-on-error': { type: 'boolean' } },
    required: ['business'],
    positional: 'FILE',
    async run({ db, writes }, values, _applied, [file]) {
      const businessId = await requireBusiness(db, String(values.business));
      const { imports } = loadConfig(process.env);
      const ok = await asCliError(() =>
        runImportCommand(
          db,
          writes,
          {
            businessId,
            file,
            dryRun: values['dry-run'] === true,
            stopOnError: values['stop-on-error'] === true,
            maxBytes: imports.maxBytes,
            leaseMs: imports.leaseMs,
          },
          printLines,
        ),
      );
      return ok ? 0 : 1;
    },
  },
};
