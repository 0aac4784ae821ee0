/**
 * Copying a catalogue into a new sandbox (issue 66's goal: 100,000 variants in at most 60 s on
 * SQLite and 120 s on PostgreSQL), with a progress bar, run as `sandbox create` runs it (in its own
 * process) beside a real server (the bundle `npm start` runs) that answers the live business's
 * requests meanwhile: a read and a write of the live business every 50 ms (open loop), whose
 * slowest answer during the copy should stay within about one batch (the longest single write of
 * the copy), beside the same traffic's slowest before the copy.
 * `npx tsx bench/sandbox-copy.ts --db sqlite|postgres [--variants 100000] [--batch 2000]`.
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
import { tableProgress } from '../src/demo/progress.ts';
import { machine } from './report.ts';
import { buildDist, startServer } from './server.ts';

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

buildDist();
const database = await createBenchDatabase(backend);
const handle = createDatabase(database.url);
let server: Awaited<ReturnType<typeof startServer>> | undefined;

/** The live business's requests every 50 ms, a read then a write, until stopped: each one's time in ms. */
function liveTraffic(base: string, headers: Record<string, string>) {
  const times: number[] = [];
  const failed: string[] = [];
  const pending: Promise<void>[] = [];
  let n = 0;
  const timer = setInterval(() => {
    const write = n++ % 2 === 1;
    const started = performance.now();
    const request = write
      ? fetch(`${base}/api/v1/items`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({
            item: { name: `Live ${n}` },
            variants: [{ variantName: 'One', currency: 'AUD', price: 1 }],
          }),
        })
      : fetch(`${base}/api/v1/items?limit=10`, { headers });
    pending.push(
      request.then(async (res) => {
        await res.arrayBuffer();
        times.push(performance.now() - started);
        if (res.status >= 300) failed.push(`${write ? 'write' : 'read'} ${res.status}`);
      }),
    );
  }, 50);
  return async () => {
    clearInterval(timer);
    await Promise.all(pending);
    const sorted = [...times].sort((a, b) => a - b);
    return {
      requests: sorted.length,
      failed,
      p99: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
      max: sorted.at(-1) ?? 0,
    };
  };
}

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
  server = await startServer(database.url, undefined, { SECRET_KEY: randomBytes(32).toString('base64') });
  const headers = { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey };
  const quiet = await (async () => {
    const stop = liveTraffic(server.base, headers);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    return stop();
  })();
  const stopLive = liveTraffic(server.base, headers);
  const progress = tableProgress();
  const started = performance.now();
  const created = await createSandbox(handle.db, demo.businessId, 'Bench', {
    writes,
    actor: CLI,
    box: new SecretBox([randomBytes(32)]),
    maxSandboxes: 10,
    batchSize: Number(values.batch),
    progress,
  });
  const seconds = (performance.now() - started) / 1000;
  progress.finish();
  const live = await stopLive();
  const variants = created.copied.item_variants;
  const rows = Object.values(created.copied).reduce((a, b) => a + b, 0);
  console.log(
    JSON.stringify({ machine: machine(loadavg()), backend, variants, rows, copied: created.copied, live, quiet }),
  );
  console.log(
    `${backend}: copied ${variants.toLocaleString('en')} variants (${rows.toLocaleString('en')} rows) in ${seconds.toFixed(1)} s, ` +
      `${Math.round(rows / seconds).toLocaleString('en')} rows/s; longest write ${longestWrite.toFixed(0)} ms. ` +
      `Goal at 100,000 variants: ${GOAL_SECONDS} s (${((seconds * 100_000) / variants).toFixed(1)} s scaled linearly).`,
  );
  console.log(
    `live business meanwhile: ${live.requests} requests (${live.failed.length} failed), p99 ${live.p99.toFixed(0)} ms, slowest ${live.max.toFixed(0)} ms ` +
      `(before the copy: p99 ${quiet.p99.toFixed(0)} ms, slowest ${quiet.max.toFixed(0)} ms).`,
  );
} finally {
  await server?.stop();
  await handle.close();
  await database.drop();
}
