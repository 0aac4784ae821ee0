/**
 * Copying a catalogue into a new sandbox (issue 66's goal: 100,000 variants in at most 60 s on
 * SQLite and 120 s on PostgreSQL), with the longest single write the live business could have waited
 * behind. `npx tsx bench/sandbox-copy.ts --db sqlite|postgres [--variants 100000] [--batch 2000]`.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDatabase } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { generateDemo } from '../src/demo/generate.ts';
import { SecretBox } from '../src/lib/secret-box.ts';
import { createSandbox } from '../src/sandbox/service.ts';
import { CLI, createWriteRunner } from '../src/write/runner.ts';
import { createBenchDatabase } from './database.ts';
import { loadavg } from 'node:os';
import { machine } from './report.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    variants: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '2000' },
  },
});
const backend = values.db === 'postgres' ? 'postgres' : 'sqlite';
const GOAL_SECONDS = { sqlite: 60, postgres: 120 }[backend];
const target = Number(values.variants);

const database = await createBenchDatabase(backend);
const handle = createDatabase(database.url);
try {
  await migrateToLatest(handle.db, handle.dialect);
  // The demo catalogue averages about 2.2 variants an item.
  const demo = await generateDemo(handle.db, { orders: 0, items: Math.ceil(target / 2.2), buyers: 50, seed: 66 });
  const runner = createWriteRunner(handle.db);
  let longestWrite = 0;
  const writes = {
    ...runner,
    run: async <T>(...args: Parameters<typeof runner.run<T>>) => {
      const started = performance.now();
      try {
        return await runner.run(...args);
      } finally {
        longestWrite = Math.max(longestWrite, performance.now() - started);
      }
    },
  };
  const started = performance.now();
  const created = await createSandbox(handle.db, demo.businessId, 'Bench', {
    writes,
    actor: CLI,
    box: new SecretBox([randomBytes(32)]),
    maxSandboxes: 10,
    batchSize: Number(values.batch),
  });
  const seconds = (performance.now() - started) / 1000;
  const variants = created.copied.item_variants;
  const rows = Object.values(created.copied).reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({ machine: machine(loadavg()), backend, variants, rows, copied: created.copied }));
  console.log(
    `${backend}: copied ${variants.toLocaleString('en')} variants (${rows.toLocaleString('en')} rows) in ${seconds.toFixed(1)} s, ` +
      `${Math.round(rows / seconds).toLocaleString('en')} rows/s; longest write ${longestWrite.toFixed(0)} ms. ` +
      `Goal at 100,000 variants: ${GOAL_SECONDS} s (${((seconds * 100_000) / variants).toFixed(1)} s scaled linearly).`,
  );
} finally {
  await handle.close();
  await database.drop();
}
