/**
 * Memory under sustained load (issue 52): the mixed load of bench/memory.ts against one server
 * for `--minutes`, sampled every `--every` seconds; the curve and the goals at the end.
 *
 *   npx tsx bench/soak.ts --db sqlite|postgres [--minutes 30] [--warmup-minutes 5] [--every 30] [--orders 20000]
 *     [--malloc-arena-max 2] [--node-options=--trace-gc] [--env RESPONSE_CACHE_MB=8,...] [--no-fill]
 *
 * Every order is read once before the load, so the response cache starts full (--no-fill: empty).
 * `npm run bench -- --only soak --minutes N` runs the same load inside the full benchmark's report.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from './database.ts';
import { loadFixtures } from './fixtures.ts';
import { fillResponseCache, measureSoak, soakTable } from './memory.ts';
import { machine } from './report.ts';
import { buildScenarios } from './scenarios.ts';
import { buildDist, runDemo, startServer } from './server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    minutes: { type: 'string', default: '30' },
    'warmup-minutes': { type: 'string', default: '5' },
    every: { type: 'string', default: '30' },
    orders: { type: 'string', default: '20000' },
    'malloc-arena-max': { type: 'string' },
    // Extra node flags for the server (NODE_OPTIONS), e.g. --heapsnapshot-signal=SIGUSR2 or --trace-gc.
    'node-options': { type: 'string' },
    // Other settings for the server, NAME=VALUE, comma-separated (RESPONSE_CACHE_MB=8).
    env: { type: 'string' },
    // Start with the response cache as it fills under the load, instead of full (every order read once first).
    'no-fill': { type: 'boolean', default: false },
  },
});
const backend = values.db === 'postgres' ? 'postgres' : 'sqlite';
const minutes = Number(values.minutes);
const warmupMinutes = Math.min(Number(values['warmup-minutes']), minutes / 2);
const env: Record<string, string> = {
  ...(values['malloc-arena-max'] ? { MALLOC_ARENA_MAX: values['malloc-arena-max'] } : {}),
  ...(values['node-options'] ? { NODE_OPTIONS: values['node-options'] } : {}),
  ...Object.fromEntries(
    (values.env ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  ),
};

buildDist();
const database = await createBenchDatabase(backend);
const demo = await runDemo(database.url, Number(values.orders));
const server = await startServer(database.url, undefined, env);
console.error(`server pid ${server.pid}`);
try {
  const fixtures = await loadFixtures(server.base, demo);
  if (!values['no-fill']) await fillResponseCache(server.base, fixtures.headers, Number(values.orders));
  const scenarios = buildScenarios(fixtures);
  const result = await measureSoak(server, scenarios, {
    backend,
    minutes,
    warmupMinutes,
    everySeconds: Number(values.every),
    onSample: (s) => console.error(JSON.stringify(s)),
  });
  const settings = Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  console.log(
    `# soak on ${backend}, ${minutes} min, ${Number(values.orders).toLocaleString('en')} demo orders, cache ${values['no-fill'] ? 'empty' : 'full'} at the start${settings ? `, ${settings}` : ''} (${JSON.stringify(machine(loadavg()))})`,
  );
  console.log(soakTable(result));
} finally {
  await server.stop();
  await database.drop();
}
