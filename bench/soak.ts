/**
 * Memory under sustained load (issue 52): the mixed load of the issue (32 connections: 4 in 10
 * order lists, 2 feed pages, 3 order reads, 1 a PATCH or a create, alternately) against one server
 * for `--minutes`, with its RSS (anonymous and file-backed), V8 heap and external memory sampled
 * every `--every` seconds. Goals: RSS at most 250 MB (SQLite) or 200 MB (PostgreSQL), and at most
 * 5 % growth after the warm-up. `npx tsx bench/soak.ts --db sqlite --minutes 30 [--malloc-arena-max 2]`.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createBenchDatabase } from './database.ts';
import { loadFixtures } from './fixtures.ts';
import { machine } from './report.ts';
import { buildScenarios } from './scenarios.ts';
import { buildDist, runDemo, startServer } from './server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' }, minutes: { type: 'string', default: '30' }, 'warmup-minutes': { type: 'string', default: '5' },
    every: { type: 'string', default: '30' }, orders: { type: 'string', default: '20000' }, 'malloc-arena-max': { type: 'string' },
  },
});
const backend = values.db === 'postgres' ? 'postgres' : 'sqlite';
const GOAL_MB = backend === 'sqlite' ? 250 : 200;
const minutes = Number(values.minutes);
const warmupMinutes = Math.min(Number(values['warmup-minutes']), minutes / 2);
const env: Record<string, string> = values['malloc-arena-max'] ? { MALLOC_ARENA_MAX: values['malloc-arena-max'] } : {};

buildDist();
const database = await createBenchDatabase(backend);
const demo = await runDemo(database.url, Number(values.orders));
const server = await startServer(database.url, undefined, env);

interface Sample { minute: number; rss: number; anon: number; file: number; heapUsed: number; external: number }

async function sample(started: number): Promise<Sample> {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  const metrics = await (await fetch(`${server.base}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1] ?? 0) / 1024 / 1024;
  return {
    minute: Math.round(((Date.now() - started) / 60_000) * 10) / 10,
    rss: Math.round(kb('VmRSS')), anon: Math.round(kb('RssAnon')), file: Math.round(kb('RssFile')),
    heapUsed: Math.round(metric('nodejs_heap_size_used_bytes')), external: Math.round(metric('nodejs_external_memory_bytes')),
  };
}

try {
  const f = await loadFixtures(server.base, demo);
  const scenarios = buildScenarios(f);
  const one = (name: string) => scenarios.find((s) => s.name === name)!.requests[0];
  const list = one('list orders (limit 20)');
  const feed = one('feed page (100 events)');
  const read = one('get order (10 items)');
  const requests = [list, read, feed, list, read, one('patch order'), list, read, feed, list, read, one('create order (5 items)')];
  const started = Date.now();
  const samples: Sample[] = [await sample(started)];
  const timer = setInterval(() => { sample(started).then((s) => samples.push(s), () => {}); }, Number(values.every) * 1000);
  const result = await autocannon({ url: server.base, requests, connections: 32, duration: minutes * 60, timeout: 60 });
  clearInterval(timer);
  samples.push(await sample(started));
  const afterWarmup = samples.filter((s) => s.minute >= warmupMinutes);
  const first = afterWarmup[0];
  const last = samples.at(-1)!;
  const peak = Math.max(...samples.map((s) => s.rss));
  const growth = first ? Math.round(((last.rss - first.rss) / first.rss) * 1000) / 10 : 0;
  console.log(`# soak on ${backend}, ${minutes} min, ${Number(values.orders).toLocaleString('en')} demo orders${env.MALLOC_ARENA_MAX ? `, MALLOC_ARENA_MAX=${env.MALLOC_ARENA_MAX}` : ''} (${JSON.stringify(machine(loadavg()))})`);
  console.log(`${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, ${result.non2xx + result.errors} errors`);
  console.log('| minute | RSS MB | anon | file | heap used | external |');
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const s of samples) console.log(`| ${s.minute} | ${s.rss} | ${s.anon} | ${s.file} | ${s.heapUsed} | ${s.external} |`);
  console.log(`peak RSS ${peak} MB (goal ${GOAL_MB}); growth after the ${warmupMinutes}-minute warm-up ${growth} % (goal at most 5 %)`);
} finally {
  await server.stop();
  await database.drop();
}
