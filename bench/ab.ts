/**
 * Two builds of the server on one database, alternated: which is cheaper per write?
 *
 *   tsx bench/ab.ts --a /path/to/checkout-a --b /path/to/checkout-b --url <DATABASE_URL> \
 *     --business B[,B2,...] --key K[,K2,...] [--scenario patch|create|ingest] [--connections 16] [--rounds 5] [--seconds 6]
 *     [--url-b <DATABASE_URL> --business-b B --key-b K]
 *
 * Each checkout must have been built (`npm run build`). Both servers run at once, on the same data
 * (a demo made with `cli demo`), and take turns: a short warm-up, then a timed run of the one, then
 * of the other, `rounds` times. It reports req/s and the CPU per request of each server and of the
 * database's processes (every `postgres` process on the machine), so that a change is compared in
 * the same minutes, on the same rows, rather than across separate runs of `npm run bench`, and
 * the round trips to the database a request took and the statements it sent (the server's
 * `supplyline_db_round_trips_total` and `supplyline_db_statements_total`; a build from before them
 * shows none). Rounds
 * alternate which build goes first. A build whose schema differs (code from before a migration)
 * runs on its own database, given with `--url-b`, `--business-b` and `--key-b`: a demo made with
 * that build's own `cli demo`. `--env-a` and `--env-b` add variables to one side's server
 * (`NAME=VALUE,NAME=VALUE`), so one build can be compared with itself under other settings: with
 * `--otlp-sink` an OTLP/HTTP receiver in this process takes the traces of whichever side sets
 * OTEL_TRACES_SAMPLER (docs/decisions/0047-telemetry.md). Each server runs as its checkout's `npm start`
 * runs it: its flags and settings (the memory ones of decision 0048), and its telemetry preload.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { vacuumWithoutAutovacuum } from './database.ts';
import { countsPerRequest, databaseCounts, sampleCpu, startServer } from './server.ts';
import { startOtlpSink } from './tracing.ts';

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    url: { type: 'string' },
    business: { type: 'string' },
    key: { type: 'string' },
    'url-b': { type: 'string' },
    'business-b': { type: 'string' },
    'key-b': { type: 'string' },
    scenario: { type: 'string', default: 'patch' },
    connections: { type: 'string', default: '16' },
    'env-a': { type: 'string', default: '' },
    'env-b': { type: 'string', default: '' },
    'otlp-sink': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '6' },
  },
});
if (!values.a || !values.b || !values.url || !values.business || !values.key) {
  console.error(
    'usage: tsx bench/ab.ts --a DIR --b DIR --url DATABASE_URL --business B --key K [--scenario patch|create|ingest] [--connections N] [--rounds N] [--seconds N]',
  );
  process.exit(2);
}
if (!['patch', 'create', 'ingest'].includes(values.scenario!)) throw new Error('--scenario is patch, create or ingest');
const builds = [values.a, values.b];
const sides = [
  { url: values.url, business: values.business, key: values.key },
  {
    url: values['url-b'] ?? values.url,
    business: values['business-b'] ?? values.business,
    key: values['key-b'] ?? values.key,
  },
];
const connections = Number(values.connections);

const sink = values['otlp-sink'] ? await startOtlpSink() : null;
const envOf = (list: string): Record<string, string> => {
  const env = Object.fromEntries(
    list
      .split(',')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
  return sink && env.OTEL_TRACES_SAMPLER ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, ...env } : env;
};
const envs = [envOf(values['env-a']), envOf(values['env-b'])];
const labels = builds.map(
  (dir, i) =>
    `${'AB'[i]}: ${dir}${
      Object.keys(envs[i]).length > 0
        ? ` (${Object.entries(envs[i])
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')})`
        : ''
    }`,
);

// Each as its checkout's `npm start` runs it: its flags, settings and telemetry preload.
const servers = [
  await startServer(sides[0].url, undefined, envs[0], builds[0]),
  await startServer(sides[1].url, undefined, envs[1], builds[1]),
];
try {
  /**
   * Each build's requests, on its own database's orders, buyers and variants. `business` and `key`
   * may each be a comma-separated list (businesses made by separate `cli demo` runs): requests then
   * go to each business in turn.
   */
  const requestOf = async (base: string, side: (typeof sides)[number]): Promise<autocannon.Request> => {
    const keys = side.key!.split(',');
    const tenants = await Promise.all(
      side.business!.split(',').map(async (business, t) => {
        const headers = { 'x-business-id': business, 'x-api-key': keys[t], 'content-type': 'application/json' };
        const get = async (path: string) =>
          (await (await fetch(`${base}/api/v1${path}`, { headers })).json()) as { items: any[] };
        const orders = (await get('/orders?limit=100')).items;
        const buyer = (await get('/buyers?limit=1')).items[0].id;
        const variants = (await get('/items?limit=20')).items.map((i) => i.variants[0].id);
        return { headers, orders, buyer, variants };
      }),
    );
    let n = 0;
    const runId = `${process.pid}-${side === sides[0] ? 'a' : 'b'}`;
    if (values.scenario === 'ingest')
      // The contract's announcement, of orders announced already after the warm-up: the repeat's path.
      return {
        method: 'POST',
        setupRequest: (r) => {
          const t = n % tenants.length;
          const { headers, orders } = tenants[t];
          const orderId = orders[Math.floor(n++ / tenants.length) % orders.length].id;
          const businessId = side.business!.split(',')[t];
          return {
            ...r,
            headers: {
              ...headers,
              'idempotency-key': createHash('sha256')
                .update(`${orderId}-${businessId}-order-integration`)
                .digest('hex'),
            },
            path: '/api/v1/orders',
            body: JSON.stringify({ orderId, businessId }),
          };
        },
      };
    return values.scenario === 'patch'
      ? {
          method: 'PATCH',
          setupRequest: (r) => {
            const { headers, orders } = tenants[n % tenants.length];
            const o = orders[Math.floor(n / tenants.length) % orders.length];
            n++;
            return {
              ...r,
              headers,
              path: `/api/v1/orders/${o.id}`,
              body: JSON.stringify({
                // The run and side in every value: a PATCH that repeats what an earlier run (or the other
                // side, on the same orders) stored changes nothing, and a write that changes nothing is cheaper.
                order: { properties: { ab: { run: runId, n } } },
                updateOrderItems: [{ id: o.orderItems[0].id, quantity: (n % 50) + 1 }],
              }),
            };
          },
        }
      : {
          method: 'POST',
          setupRequest: (r) => {
            const i = ++n;
            const { headers, buyer, variants } = tenants[i % tenants.length];
            const orderItems = Array.from({ length: 5 }, (_, k) => ({
              itemVariantId: variants[(i * 5 + k) % variants.length],
              quantity: 2,
            }));
            return {
              ...r,
              headers,
              path: `/api/v1/buyers/${buyer}/orders`,
              body: JSON.stringify({
                expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
                externalReference: `AB-${process.pid}-${i}`,
                orderItems,
              }),
            };
          },
        };
  };
  const requests = [await requestOf(servers[0].base, sides[0]), await requestOf(servers[1].base, sides[1])];
  const results = builds.map(
    () =>
      [] as Array<{ rps: number; server: number; database: number; trips: number | null; statements: number | null }>,
  );
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const server = servers[i];
      if (await vacuumWithoutAutovacuum(sides[i].url))
        console.error(`round ${round + 1}: vacuumed (autovacuum is off)`);
      await autocannon({ url: server.base, requests: [requests[i]], amount: connections * 10, connections });
      const countsBefore = await databaseCounts(server.base);
      const stop = sampleCpu(server.pid);
      const run = await autocannon({
        url: server.base,
        requests: [requests[i]],
        duration: Number(values.seconds),
        connections,
      });
      const cpu = stop();
      const countsAfter = await databaseCounts(server.base);
      if (run.non2xx + run.errors > 0)
        throw new Error(`${labels[i]}: ${run.non2xx} non-2xx answers, ${run.errors} errors`);
      const per = (ms: number) => Math.round((ms * 1000) / run.requests.total);
      results[i].push({
        rps: Math.round(run.requests.average),
        server: per(cpu.serverMs),
        database: per(cpu.databaseMs),
        ...countsPerRequest(countsBefore, countsAfter, run.requests.total),
      });
      console.error(`round ${round + 1} ${labels[i]}: ${results[i].at(-1)!.rps} req/s`);
    }
  }
  const mean = (rows: (typeof results)[number], k: 'rps' | 'server' | 'database') =>
    Math.round(rows.reduce((t, r) => t + r[k], 0) / rows.length);
  const meanOf = (rows: (typeof results)[number], k: 'trips' | 'statements') =>
    rows.some((r) => r[k] === null) ? '—' : (rows.reduce((t, r) => t + r[k]!, 0) / rows.length).toFixed(2);
  console.log(`${values.scenario}, ${connections} connections, ${values.rounds} rounds of ${values.seconds} s`);
  console.log(
    '| build | req/s (each round) | mean | server CPU µs/req (mean) | database CPU µs/req (mean) | round trips/req (mean) | statements/req (mean) |\n|---|---|---:|---:|---:|---:|---:|',
  );
  for (const [i, rows] of results.entries()) {
    console.log(
      `| ${labels[i]} | ${rows.map((r) => r.rps).join(' / ')} | ${mean(rows, 'rps')} | ${mean(rows, 'server')} | ${mean(rows, 'database')} | ${meanOf(rows, 'trips')} | ${meanOf(rows, 'statements')} |`,
    );
  }
} finally {
  for (const server of servers) await server.stop();
  if (sink) console.log(`OTLP sink received ${Math.round((await sink.close()) / 1024)} KiB of traces`);
}
