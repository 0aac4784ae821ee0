/**
 * Reads from a streaming replica (issue 65), by hand: `npx tsx bench/replicas.ts [--seconds 8] [--pairs 2000]`.
 * Starts a primary and a replica of its own (test/helpers/replica-cluster.ts) and one app in this
 * process with DATABASE_REPLICA_URLS, and reports
 *   - the share of reads the replica served under a mixed load (4 reads to 1 PATCH, 16 clients);
 *   - the routing decision's added latency (p50/p99: the primary's position and the replica's
 *     replay, read side by side), and GET latency with and without replicas on the same data;
 *   - a write-then-read probe: PATCH, then GET at once, while replay pauses and resumes; stale must be 0.
 * On a 2-core machine the throughput gain cannot show: the replica shares the cores.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.ts';
import { openBusiness } from '../src/businesses/service.ts';
import { loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createWriteRunner } from '../src/write/runner.ts';
import { startReplicatedCluster } from '../test/helpers/replica-cluster.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    pairs: { type: 'string', default: '2000' },
    clients: { type: 'string', default: '16' },
  },
});
const SECONDS = Number(values.seconds);
const PAIRS = Number(values.pairs);
const CLIENTS = Number(values.clients);

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const ms = (x: number) => `${x.toFixed(2)} ms`;
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

const cluster = await startReplicatedCluster('bench');
try {
  const config = Object.freeze({ ...loadConfig({ RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn' }) });
  const handle = createDatabase(cluster.primaryUrl(), { replicaUrls: [cluster.replicaUrl()] });
  await migrateToLatest(handle.db, handle.dialect);
  const replicas = handle.replicas!;
  const routed = await createApp({ db: handle.db, config, rateLimiter: null, replicas });
  const plain = await createApp({ db: handle.db, config, rateLimiter: null });
  const choices: number[] = [];
  const counted = replicas.onChoice;
  replicas.onChoice = (target, seconds) => {
    choices.push(seconds * 1000);
    counted(target, seconds);
  };
  const bases = await Promise.all([routed, plain].map((app) => app.listen({ port: 0, host: '127.0.0.1' })));
  const [withReplicas, withoutReplicas] = bases as [string, string];
  const business = await openBusiness(createWriteRunner(handle.db), 'Bench Replicas');
  const headers = {
    'x-business-id': business.businessId,
    'x-api-key': business.apiKey,
    'content-type': 'application/json',
  };
  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  const item = await call(withReplicas, 'POST', '/api/v1/items', {
    item: { name: 'Widget' },
    variants: [{ variantName: 'Default', currency: 'AUD', price: 12.5 }],
  });
  const buyer = await call(withReplicas, 'POST', '/api/v1/buyers', { buyer: { name: 'Acme' } });
  const ids: string[] = [];
  for (let i = 0; i < 200; i++)
    ids.push(
      (
        await call(withReplicas, 'POST', `/api/v1/buyers/${buyer.id}/orders`, {
          expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
          orderItems: [{ itemVariantId: item.variantIds[0], quantity: 1 }],
        })
      ).id,
    );
  await replicas.probe();

  const metrics = async () => {
    const text = await (await fetch(`${withReplicas}/metrics`)).text();
    const of = (target: string) =>
      Number(new RegExp(`supplyline_reads_total\\{target="${target}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    return { primary: of('primary'), replica: of('replica') };
  };

  // 1. The mixed load: 4 reads (one order, or a page of the list) to 1 PATCH.
  const before = await metrics();
  const positionsBefore = replicas.positionQueries;
  choices.length = 0;
  let requests = 0;
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let n = 0; Date.now() < until; n++) {
        const id = ids[(c * 31 + n * 7) % ids.length]!;
        if (n % 5 === 4) await call(withReplicas, 'PATCH', `/api/v1/orders/${id}`, { order: { notes: `c${c} n${n}` } });
        else if (n % 5 === 3) await call(withReplicas, 'GET', '/api/v1/orders?limit=20');
        else await call(withReplicas, 'GET', `/api/v1/orders/${id}`);
        requests++;
      }
    }),
  );
  const after = await metrics();
  const replicaReads = after.replica - before.replica;
  const primaryReads = after.primary - before.primary;
  const reads = replicaReads + primaryReads;
  console.log(`load average: ${loadavg()[0]!.toFixed(2)} (2 cores, shared)`);
  console.log(
    `mixed load, ${CLIENTS} clients, ${SECONDS} s: ${requests} requests (${Math.round(requests / SECONDS)}/s)`,
  );
  console.log(
    `  reads served by the replica: ${replicaReads} of ${reads} (${((100 * replicaReads) / reads).toFixed(1)} %), ` +
      `primary position queries: ${replicas.positionQueries - positionsBefore} for ${reads} reads and ${requests - reads} writes`,
  );
  console.log(`  routing decision: p50 ${ms(quantile(choices, 0.5))}, p99 ${ms(quantile(choices, 0.99))}`);

  // 2. GET latency with and without replicas, reads only, one client at a time (the decision's cost alone).
  for (const [name, base] of [
    ['without replicas', withoutReplicas],
    ['with replicas', withReplicas],
  ] as const) {
    const times: number[] = [];
    choices.length = 0;
    for (let i = 0; i < 1000; i++) {
      const started = performance.now();
      await call(base, 'GET', `/api/v1/orders/${ids[i % ids.length]}`);
      times.push(performance.now() - started);
    }
    const decision =
      choices.length > 0
        ? `; routing decision p50 ${ms(quantile(choices, 0.5))}, p99 ${ms(quantile(choices, 0.99))}`
        : '';
    console.log(
      `  GET /orders/{id}, one client, ${name}: p50 ${ms(quantile(times, 0.5))}, p99 ${ms(quantile(times, 0.99))}${decision}`,
    );
  }

  // 3. Write, then read at once through the routed app, while replay pauses and resumes.
  let stale = 0;
  let pausing = true;
  let pauses = 0;
  const pauser = (async () => {
    while (pausing) {
      await cluster.onReplica('select pg_wal_replay_pause()');
      pauses++;
      await sleep(200);
      await cluster.onReplica('select pg_wal_replay_resume()');
      await sleep(300);
    }
  })();
  const probeBefore = await metrics();
  await Promise.all(
    Array.from({ length: 8 }, async (_, c) => {
      for (let n = c; n < PAIRS; n += 8) {
        const id = ids[n % ids.length]!;
        const written = await call(withReplicas, 'PATCH', `/api/v1/orders/${id}`, { order: { notes: `probe ${n}` } });
        const read = await call(withReplicas, 'GET', `/api/v1/orders/${id}`);
        if (read.version < written.version) stale++;
      }
    }),
  );
  pausing = false;
  await pauser;
  const probeAfter = await metrics();
  console.log(
    `write-then-read probe: ${PAIRS} PATCH+GET pairs, replay paused ${pauses} times: ${stale} stale; ` +
      `${probeAfter.replica - probeBefore.replica} reads from the replica, ${probeAfter.primary - probeBefore.primary} from the primary`,
  );
  await routed.close();
  await plain.close();
  await handle.close();
  if (stale > 0) process.exitCode = 1;
} finally {
  await cluster.stop();
}
