import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { loadFixtures } from '../../../bench/fixtures.ts';
import { fillResponseCache, readRss, RSS_BUDGET_MB, soakRequests } from '../../../bench/memory.ts';
import { buildScenarios } from '../../../bench/scenarios.ts';
import { sampleCpu } from '../../../bench/server.ts';
import { baseEnv, createPgDatabase, PG_URL, sleep, startBundle, buildBundle } from '../helpers.ts';

// Memory under sustained load (issue 52, docs/decisions/0048-memory-budget.md): the server as
// `npm start` runs it (the bundle, with its flags and settings) holds a demo of 20,000 orders, has every order
// rendered once so that the response cache is full, then takes bench/soak.ts's mixed load. Its RSS,
// read from /proc every quarter second, must stay within the budget the whole time: 250 MB on
// SQLite, 200 MB on PostgreSQL. The full 30 minutes is `npm run bench:soak`; this is its guard.
const SECONDS = Number(process.env.RELIABILITY_MEMORY_SECONDS || 30);
const ORDERS = 20_000;
const CACHE_MB = 32;

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
const backends: Array<'sqlite' | 'postgres'> = ['sqlite', ...(PG_URL ? ['postgres' as const] : [])];

describe('Memory: RSS within the budget under the mixed load, with the response cache full', () => {
  let bundle: Awaited<ReturnType<typeof buildBundle>> | undefined;
  before(async () => {
    bundle = await buildBundle('memory');
  });
  after(() => bundle?.remove());

  for (const backend of backends) {
    it(`[${backend}] stays within ${RSS_BUDGET_MB[backend]} MB of RSS`, {
      timeout: (SECONDS + 150) * 1000,
    }, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'supplyline-memory-'));
      const database =
        backend === 'postgres'
          ? await createPgDatabase()
          : { url: `sqlite:${join(dir, 'memory.db')}`, drop: async () => {} };
      let server: Awaited<ReturnType<typeof startBundle>> | undefined;
      try {
        const env = { DATABASE_URL: database.url, RESPONSE_CACHE_MB: String(CACHE_MB) };
        const { stdout } = await run(
          process.execPath,
          [join(bundle!.outdir, 'cli.js'), 'demo', '--orders', String(ORDERS), '--json'],
          {
            cwd: ROOT,
            env: { ...baseEnv, ...env },
            maxBuffer: 16 * 1024 * 1024,
          },
        );
        const demo = JSON.parse(stdout.trim().split('\n').at(-1)!) as { businessId: string; apiKey: string };
        server = await startBundle(bundle!.outdir, env);
        const pid = server.child.pid!;
        const fixtures = await loadFixtures(server.base, demo);

        // Every order rendered once: more than the cache holds.
        await fillResponseCache(server.base, fixtures.headers, ORDERS);

        let peak = 0;
        const stopCpu = sampleCpu(pid);
        const sampler = setInterval(() => {
          peak = Math.max(peak, readRss(pid).rss);
        }, 250);
        const result = await autocannon({
          url: server.base,
          requests: soakRequests(buildScenarios(fixtures)),
          connections: 32,
          duration: SECONDS,
          timeout: 30,
        });
        const cpuMs = stopCpu().serverMs;
        await sleep(500);
        clearInterval(sampler);
        peak = Math.max(peak, readRss(pid).rss);

        const metrics = await (await fetch(`${server.base}/metrics`)).text();
        const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1]);
        const cacheBytes = metric('supplyline_response_cache_bytes');
        console.log(
          `memory [${backend}]: ${SECONDS} s, ${Math.round(result.requests.average)} req/s, server CPU ${Math.round((cpuMs * 1000) / result.requests.total)} µs a request, peak RSS ${peak} MB ` +
            `(budget ${RSS_BUDGET_MB[backend]}); heap ${Math.round(metric('nodejs_heap_size_used_bytes') / 2 ** 20)}/` +
            `${Math.round(metric('nodejs_heap_size_total_bytes') / 2 ** 20)} MB, external ${Math.round(metric('nodejs_external_memory_bytes') / 2 ** 20)} MB, ` +
            `response cache ${Math.round(cacheBytes / 2 ** 20)} MB in ${metric('supplyline_response_cache_entries')} entries`,
        );
        assert.equal(result.errors + result.non2xx, 0, 'every request answered');
        assert.ok(
          cacheBytes > (CACHE_MB - 2) * 2 ** 20 && cacheBytes <= CACHE_MB * 2 ** 20,
          `the response cache was full and within RESPONSE_CACHE_MB (${cacheBytes} bytes)`,
        );
        assert.ok(peak <= RSS_BUDGET_MB[backend], `peak RSS ${peak} MB over the ${RSS_BUDGET_MB[backend]} MB budget`);
      } finally {
        await server?.stop();
        await database.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
