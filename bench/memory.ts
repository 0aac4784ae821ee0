/**
 * Memory under sustained load (issue 52, docs/decisions/0048-memory-budget.md): the mixed
 * load against one server, with the server's RSS (anonymous and file-backed), V8 heap, external
 * memory and response cache sampled as it runs. Used by `npm run bench:soak` (bench/soak.ts),
 * `npm run bench -- --only soak` and the reliability suite's memory guard.
 */
import { readFileSync } from 'node:fs';
import type autocannon from 'autocannon';
import type { Scenario } from './scenarios.ts';
import { sampleCpu } from './server.ts';

/** What a server may hold under the mixed load: RSS in MB, by backend (one instance each). */
export const RSS_BUDGET_MB = { sqlite: 250, postgres: 200 } as const;

/** The mix, for 32 connections: 4 in 10 order lists, 2 feed pages, 3 order reads, 1 a PATCH or a create. */
export function soakRequests(scenarios: Scenario[]): autocannon.Request[] {
  const one = (name: string) => scenarios.find((s) => s.name === name)!.requests[0];
  const list = one('list orders (limit 20)');
  const feed = one('feed page (100 events)');
  const read = one('get order (10 items)');
  return [
    list,
    read,
    feed,
    list,
    read,
    one('patch order'),
    list,
    read,
    feed,
    list,
    read,
    one('create order (5 items)'),
  ];
}

/**
 * Reads every order once, a page of 100 at a time, 4 requests at once: with more orders than the
 * response cache holds, the cache is then full, and what follows measures retention, not the cache
 * filling (at a few hundred requests a second the mixed load alone takes many minutes to fill it).
 */
export async function fillResponseCache(base: string, headers: Record<string, string>, orders: number): Promise<void> {
  let page = 0;
  const pages = Math.ceil(orders / 100);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let p = ++page; p <= pages; p = ++page) {
        const res = await fetch(`${base}/api/v1/orders?limit=100&page=${p}`, { headers });
        if (res.status !== 200) throw new Error(`GET /api/v1/orders page ${p}: ${res.status}`);
        await res.arrayBuffer();
      }
    }),
  );
}

export interface MemorySample {
  minute: number;
  /** MB: the process's resident set, its anonymous and file-backed parts. */
  rss: number;
  anon: number;
  file: number;
  /** MB: V8's heap used and reserved (of which the young generation), Buffers and other external memory, the response cache. */
  heapUsed: number;
  heapTotal: number;
  newSpace: number;
  external: number;
  cache: number;
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

/** The server's RSS, in MB, from /proc (Linux). */
export function readRss(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: mb(kb('VmRSS') * 1024), anon: mb(kb('RssAnon') * 1024), file: mb(kb('RssFile') * 1024) };
}

/** One sample: /proc for RSS, the server's /metrics for the rest. */
export async function sampleMemory(pid: number, base: string, started: number): Promise<MemorySample> {
  const rss = readRss(pid);
  const metrics = await (await fetch(`${base}/metrics`)).text();
  const metric = (name: string) =>
    mb(Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)`, 'm').exec(metrics)?.[1] ?? 0));
  return {
    minute: Math.round(((Date.now() - started) / 60_000) * 10) / 10,
    ...rss,
    heapUsed: metric('nodejs_heap_size_used_bytes'),
    heapTotal: metric('nodejs_heap_size_total_bytes'),
    newSpace: metric('nodejs_heap_space_size_total_bytes{space="new"}'),
    external: metric('nodejs_external_memory_bytes'),
    cache: metric('supplyline_response_cache_bytes'),
  };
}

export interface SoakResult {
  backend: 'sqlite' | 'postgres';
  minutes: number;
  warmupMinutes: number;
  requestsPerSecond: number;
  /** The server's CPU time per request, µs: steadier than req/s on a shared machine. */
  cpuUsPerRequest: number;
  p99: number;
  errors: number;
  samples: MemorySample[];
  peakRss: number;
  /** Percent, from the first sample after the warm-up to the last. */
  growth: number;
}

/** The mixed load for `minutes`, sampled every `everySeconds`. */
export async function measureSoak(
  server: { pid: number; base: string },
  scenarios: Scenario[],
  options: {
    backend: 'sqlite' | 'postgres';
    minutes: number;
    warmupMinutes: number;
    everySeconds: number;
    onSample?: (s: MemorySample) => void;
  },
): Promise<SoakResult> {
  const { default: run } = await import('autocannon');
  const started = Date.now();
  const stopCpu = sampleCpu(server.pid);
  const samples: MemorySample[] = [await sampleMemory(server.pid, server.base, started)];
  const timer = setInterval(() => {
    sampleMemory(server.pid, server.base, started).then(
      (s) => {
        samples.push(s);
        options.onSample?.(s);
      },
      () => {},
    );
  }, options.everySeconds * 1000);
  const result = await run({
    url: server.base,
    requests: soakRequests(scenarios),
    connections: 32,
    duration: options.minutes * 60,
    timeout: 60,
  });
  clearInterval(timer);
  const cpu = stopCpu();
  samples.push(await sampleMemory(server.pid, server.base, started));
  const first = samples.find((s) => s.minute >= options.warmupMinutes);
  const last = samples.at(-1)!;
  return {
    backend: options.backend,
    minutes: options.minutes,
    warmupMinutes: options.warmupMinutes,
    requestsPerSecond: Math.round(result.requests.average),
    cpuUsPerRequest: Math.round((cpu.serverMs * 1000) / Math.max(1, result.requests.total)),
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    samples,
    peakRss: Math.max(...samples.map((s) => s.rss)),
    growth: first ? Math.round(((last.rss - first.rss) / first.rss) * 1000) / 10 : 0,
  };
}

/** The curve as a Markdown table, with the goals under it. */
export function soakTable(result: SoakResult): string {
  const lines = [
    `${result.requestsPerSecond} req/s, server CPU ${result.cpuUsPerRequest} µs a request, p99 ${result.p99} ms, ${result.errors} errors`,
    '| minute | RSS MB | anon | file | heap used | heap total | external | response cache |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.samples.map(
      (s) =>
        `| ${s.minute} | ${s.rss} | ${s.anon} | ${s.file} | ${s.heapUsed} | ${s.heapTotal} | ${s.external} | ${s.cache} |`,
    ),
    `peak RSS ${result.peakRss} MB (goal ${RSS_BUDGET_MB[result.backend]}); growth after the ${result.warmupMinutes}-minute warm-up ` +
      `${result.growth} % (goal at most 5 %)`,
  ];
  return lines.join('\n');
}
