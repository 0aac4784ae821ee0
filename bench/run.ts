import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startCeiling, startEchoCeiling, type Ceiling } from './ceiling.ts';
import { measureFloor } from './floor.ts';
import { createBenchDatabase, vacuumWithoutAutovacuum } from './database.ts';
import { loadFixtures } from './fixtures.ts';
import { runLoad, warmUp } from './load.ts';
import { formatTable, machine, saveReport, type Report, type Row } from './report.ts';
import { buildScenarios } from './scenarios.ts';
import { measureExport, measureWake } from './events.ts';
import { measureWebhooks } from './webhooks.ts';
import { consoleRequests } from './console.ts';
import { listsTable, measureLists, summariseLists } from './lists.ts';
import { measureScaleOut, mixedRequests } from './scaleout.ts';
import { fillResponseCache, measureSoak, soakTable } from './memory.ts';
import { measureTracing, tracingTable } from './tracing.ts';
import { buildDist, countsPerRequest, databaseCounts, runDemo, sampleCpu, sampleRss, startServer } from './server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    // The orders to generate, or with --url the orders its business holds (results are named by it).
    orders: { type: 'string' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    only: { type: 'string' },
    // An already generated database (for example 1,000,000 orders made once with `cli demo`), kept afterwards.
    url: { type: 'string' },
    business: { type: 'string' },
    key: { type: 'string' },
    // A directory for the server's CPU profile (node --cpu-prof), written when the run ends.
    profile: { type: 'string' },
    // Requests per list case (bench/lists.ts), one at a time.
    'list-requests': { type: 'string', default: '20' },
    // Only the list cases with all of these filters (comma-separated, as bench/lists.ts names them).
    'list-with': { type: 'string' },
    // --only soak (a long case, never in the default run): the mixed load for this many minutes, memory sampled (bench/memory.ts).
    minutes: { type: 'string', default: '30' },
    // --only tracing: alternating rounds per scenario of an untraced and a traced server (bench/tracing.ts), and the sampled share.
    rounds: { type: 'string', default: '4' },
    'trace-ratio': { type: 'string', default: '0.1' },
    // --only tracing --floor: the second server only enters an AsyncLocalStorage, what any tracer on Node costs first.
    floor: { type: 'boolean', default: false },
    'warmup-minutes': { type: 'string', default: '5' },
  },
});
const reuse = values.url !== undefined;
if (reuse && (!values.business || !values.key || !values.orders))
  throw new Error('--url needs --business, --key and --orders (the orders its business holds)');
const db = reuse ? (values.url!.startsWith('sqlite:') ? 'sqlite' : 'postgres') : values.db;
const backend = db === 'postgres' ? 'postgres' : db === 'sqlite' ? 'sqlite' : undefined;
if (!backend) throw new Error('--db must be sqlite or postgres');
const orders = Number(values.orders ?? 10_000);
if (!Number.isSafeInteger(orders) || orders < 1) throw new Error('--orders must be a positive whole number');
const options = { duration: Number(values.duration), connections: Number(values.connections) };
const startedAt = new Date().toISOString();

buildDist();
const database = reuse
  ? { url: values.url!, describe: `${values.url} (existing data)`, drop: async () => {} }
  : await createBenchDatabase(backend);
console.error(
  `Benchmark on ${database.describe}: ${orders.toLocaleString('en')} orders, ${options.duration} s per scenario, ${options.connections} connections`,
);
let server: Awaited<ReturnType<typeof startServer>> | undefined;
try {
  const generationStarted = performance.now();
  const demo = reuse
    ? { businessId: values.business!, apiKey: values.key!, log: '' }
    : await runDemo(database.url, orders);
  const generationSeconds = (performance.now() - generationStarted) / 1000;
  const rate = Number(demo.log.match(/\(([\d,]+) orders\/s\)/)?.[1].replace(/,/g, '') ?? 0);
  server = await startServer(database.url, values.profile);
  const fixtures = await loadFixtures(server.base, demo);

  const rows: Row[] = [];
  const only = values.only?.split(',') ?? [];
  // The console's orders page, rendered on the server for a signed-in viewer (issue 19).
  const consolePage = {
    name: 'console orders page',
    kind: 'read' as const,
    requests: await consoleRequests(server.base, database.url, fixtures.businessId),
  };
  const scenarios = [...buildScenarios(fixtures), consolePage].filter(
    (s) => only.length === 0 || only.some((o) => s.name.includes(o)),
  );
  // Issue 67: one business's writes against those of 20 businesses at once (19 more demos, each of
  // a twentieth of the orders), each connection taking the businesses in turn.
  if (only.some((o) => o.includes('businesses'))) {
    const others = [];
    for (let i = 0; i < 19; i++) others.push(await runDemo(database.url, Math.max(300, Math.round(orders / 20))));
    const each = [
      buildScenarios(fixtures),
      ...(await Promise.all(others.map((c) => loadFixtures(server!.base, c)))).map(buildScenarios),
    ];
    for (const name of ['patch order', 'create order (5 items)', 'ingestion']) {
      scenarios.push({
        name: `${name}, 20 businesses`,
        kind: 'write',
        requests: each.map((s) => s.find((scenario) => scenario.name === name)!.requests[0]),
      });
    }
  }
  for (const scenario of scenarios) {
    // Without autovacuum (this machine's PostgreSQL), the scenarios before would slow this one.
    await vacuumWithoutAutovacuum(database.url);
    // A short warm-up, so that JIT and the page cache do not count against the first scenario.
    await warmUp(server.base, scenario.requests, options.connections);
    const loadAverage = loadavg()[0];
    const stopRss = sampleRss(server.pid);
    const stopCpu = sampleCpu(server.pid);
    const countsBefore = await databaseCounts(server.base);
    const result = await runLoad(server.base, scenario.requests, options);
    const cpu = stopCpu();
    const sent = countsPerRequest(countsBefore, await databaseCounts(server.base), result.requests);
    const perRequest = (ms: number) => Math.round((ms * 1000) / Math.max(1, result.requests));
    rows.push({
      scenario: scenario.name,
      kind: scenario.kind,
      ...result,
      rssMb: stopRss(),
      loadAverage,
      cpuUs: { server: perRequest(cpu.serverMs), database: backend === 'postgres' ? perRequest(cpu.databaseMs) : 0 },
      ...(sent.trips !== null && sent.statements !== null
        ? { perRequest: { trips: sent.trips, statements: sent.statements } }
        : {}),
    });
    console.error(
      `${scenario.name}: ${result.requestsPerSecond} req/s, p50 ${result.p50} ms, errors ${result.errors} ${JSON.stringify(result.statusCodes)}`,
    );
  }

  // The event log's readers: an export read to its end, and the long poll's wake-up.
  const events =
    only.length === 0 || only.some((o) => 'export wake'.includes(o))
      ? {
          export: await measureExport(server.base, fixtures, server.pid),
          wake: await measureWake(server.base, fixtures),
        }
      : undefined;
  if (events) {
    console.error(
      `export orders: ${events.export.records} in ${events.export.seconds} s (${events.export.recordsPerSecond}/s), server RSS ${events.export.rssMb} MB; ` +
        `long poll woken ${events.wake.p50Ms} ms after the write's answer (median of ${events.wake.tries})`,
    );
  }

  // Webhook delivery: latency on an empty queue, deliveries per second, and writes while delivering.
  const webhooks =
    only.length === 0 || only.includes('webhooks')
      ? await measureWebhooks(
          server.base,
          fixtures,
          buildScenarios(fixtures).find((s) => s.name === 'patch order')!.requests,
          options,
        )
      : undefined;
  if (webhooks) {
    console.error(
      `webhooks: ${webhooks.throughput.perSecond} deliveries/s (${webhooks.throughput.deliveries} in ${webhooks.throughput.seconds} s); ` +
        `commit to delivery p50 ${webhooks.latency.p50Ms} ms (max ${webhooks.latency.maxMs}); patch ${webhooks.writes.alone.requestsPerSecond} req/s alone, ` +
        `${webhooks.writes.whileDelivering.requestsPerSecond} while delivering (${webhooks.writes.ratio}×)`,
    );
  }

  // The ceilings: a bare node:http server sending the get-order bytes, and one echoing a write's body.
  const measureCeiling = async (start: () => Promise<Ceiling>, requests: import('autocannon').Request[]) => {
    const ceilingServer = await start();
    await warmUp(ceilingServer.url, requests, options.connections);
    const result = await runLoad(ceilingServer.url, requests, options);
    await ceilingServer.close();
    return result;
  };
  const sample = await fetch(`${server.base}/api/v1/orders/${fixtures.tenItemOrderId}`, { headers: fixtures.headers });
  const sampleBody = Buffer.from(await sample.arrayBuffer());
  const ceiling = await measureCeiling(
    () => startCeiling(sampleBody, sample.headers.get('content-type') ?? 'application/json'),
    [{ method: 'GET', path: '/' }],
  );
  const get = rows.find((r) => r.scenario.startsWith('get order'));
  if (get) get.ratioToCeiling = get.requestsPerSecond / ceiling.requestsPerSecond;
  const writes = rows.filter((r) => r.kind === 'write');
  const echoCeiling =
    writes.length === 0
      ? undefined
      : await measureCeiling(
          startEchoCeiling,
          buildScenarios(fixtures).find((s) => s.name === 'patch order')!.requests,
        );
  for (const row of writes) row.ratioToCeiling = row.requestsPerSecond / echoCeiling!.requestsPerSecond;
  // PostgreSQL: the same serialized write in plain SQL through pgbench, on this database (bench/floor.ts).
  const floor = backend === 'postgres' && writes.length > 0 ? await measureFloor(database.url, options) : undefined;
  for (const row of writes) if (floor) row.ratioToFloor = row.requestsPerSecond / floor.threeStatements;

  // The list cases an integration hits, one request at a time (bench/lists.ts).
  const lists =
    only.length === 0 || only.includes('lists')
      ? await measureLists(server.base, fixtures, orders, {
          requests: Number(values['list-requests']),
          with: values['list-with']?.split(','),
          onCase: (c) => console.error(`list ${c.name} [${c.page}]: p50 ${c.p50} ms, p99 ${c.p99}, total ${c.total}`),
        })
      : undefined;

  // Memory under the mixed load for --minutes (30 by default), the response cache full first: only when asked for, it is long.
  let soak: Awaited<ReturnType<typeof measureSoak>> | undefined;
  if (only.includes('soak')) {
    await fillResponseCache(server.base, fixtures.headers, orders);
    soak = await measureSoak(server, buildScenarios(fixtures), {
      backend,
      minutes: Number(values.minutes),
      warmupMinutes: Math.min(Number(values['warmup-minutes']), Number(values.minutes) / 2),
      everySeconds: 30,
      onSample: (s) =>
        console.error(
          `soak minute ${s.minute}: RSS ${s.rss} MB (anon ${s.anon}), heap ${s.heapUsed}/${s.heapTotal} MB, external ${s.external} MB`,
        ),
    });
  }

  // What tracing costs (issue 50): only when asked for, two servers take turns on every scenario.
  let tracing: Awaited<ReturnType<typeof measureTracing>> | undefined;
  if (only.includes('tracing')) {
    const names = [
      'get order (10 items)',
      'list orders (limit 20)',
      'feed page (100 events)',
      'patch order',
      'create order (5 items)',
    ];
    const all = buildScenarios(fixtures);
    const chosen = [
      ...names.map((name) => all.find((s) => s.name === name)!),
      { name: 'mixed (get, lists, patch, create)', requests: mixedRequests(all) },
    ];
    tracing = await measureTracing(database.url, chosen, {
      ...options,
      rounds: Number(values.rounds),
      ratio: Number(values['trace-ratio']),
      floor: values.floor,
      onRound: (line) => console.error(line),
    });
  }

  // Scale-out on PostgreSQL: one, two and three instances, with this run's server stopped.
  let scaleOut: Awaited<ReturnType<typeof measureScaleOut>> | undefined;
  if (only.includes('scaleout')) {
    if (backend !== 'postgres')
      throw new Error('--only scaleout needs PostgreSQL (several instances share one database)');
    await server.stop();
    scaleOut = await measureScaleOut(database.url, fixtures, mixedRequests(buildScenarios(fixtures)), options);
    for (const r of scaleOut) {
      console.error(
        `scale-out ${r.instances} instance(s): ${r.requestsPerSecond} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors}; ` +
          `CPU servers ${r.cpu.servers}, PostgreSQL ${r.cpu.postgres} of ${r.cpu.cores} cores`,
      );
    }
  }

  const report: Report = {
    backend,
    orders,
    ...options,
    startedAt,
    ceiling,
    echoCeiling,
    floor,
    rows,
    events,
    webhooks,
    lists,
    soak,
    scaleOut,
    tracing,
    generation: {
      seconds: Math.round(generationSeconds * 10) / 10,
      ordersPerSecond: rate,
      log: demo.log
        .split('\n')
        .filter((l) => l.startsWith('Created') || l.includes('orders/s'))
        .join(' '),
    },
    machine: machine(loadavg()),
  };
  console.log(
    `\n${backend}, ${orders.toLocaleString('en')} orders, ${options.connections} connections, ${options.duration} s per scenario (load average ${report.machine.loadAverage.map((l) => l.toFixed(1)).join(' ')})\n`,
  );
  console.log(formatTable(report));
  if (lists) console.log(`\n${listsTable(lists)}\n\n${summariseLists(lists)}`);
  if (tracing) console.log(`\n${tracingTable(tracing)}`);
  if (soak) console.log(`\nMemory under the mixed load (32 connections, ${soak.minutes} min):\n${soakTable(soak)}`);
  console.log(`\nSaved ${saveReport(report)}`);
} finally {
  await server?.stop();
  await database.drop();
}
