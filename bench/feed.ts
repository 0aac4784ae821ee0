/**
 * The event layer at scale (issue 51): feed pages at random places, a filtered feed of rare events,
 * and the order export, on a business with millions of events. Each case runs against a server
 * process of its own, started for it; with root, the page cache is dropped before each case, so
 * the pages are read cold. The rows are reported beside their goals.
 *
 *   npm run bench:feed -- --orders 1000000 --events 10000000          (generates, then grows the log)
 *   npm run bench:feed -- --url sqlite:/tmp/demo.db --business bus_… --key sl_live_… [--events N]
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createDatabase } from '../src/db/connection.ts';
import { sequenceRange } from '../src/events/repository.ts';
import { createBenchDatabase } from './database.ts';
import { measureExport } from './events.ts';
import { machine } from './report.ts';
import { buildDist, runDemo, startServer } from './server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    orders: { type: 'string', default: '1000000' },
    events: { type: 'string', default: '10000000' },
    url: { type: 'string' },
    business: { type: 'string' },
    key: { type: 'string' },
    requests: { type: 'string', default: '200' },
    only: { type: 'string' },
    // Keep the page cache (the cases then read warm, after their first requests).
    warm: { type: 'boolean', default: false },
  },
});
const requests = Number(values.requests);

buildDist();
const database = values.url
  ? { url: values.url, describe: `${values.url} (existing data)`, drop: async () => {} }
  : await createBenchDatabase(values.db === 'postgres' ? 'postgres' : 'sqlite');
const demo = values.url
  ? { businessId: values.business!, apiKey: values.key! }
  : await runDemo(database.url, Number(values.orders));
if (!demo.businessId || !demo.apiKey) throw new Error('--url needs --business and --key');
const headers = { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey };

const handle = createDatabase(database.url);
let range = await sequenceRange(handle.db, demo.businessId);
if (range.latest < Number(values.events)) {
  console.error(
    `growing the log from ${range.latest.toLocaleString('en')} to ${Number(values.events).toLocaleString('en')} events`,
  );
  execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/grow-events.ts',
      '--url',
      database.url,
      '--business',
      demo.businessId,
      '--to',
      values.events!,
    ],
    { stdio: 'inherit' },
  );
  range = await sequenceRange(handle.db, demo.businessId);
}
await handle.close();
console.error(
  `Feed benchmark on ${database.describe}: events ${range.oldest.toLocaleString('en')}..${range.latest.toLocaleString('en')}`,
);

/** Drops the kernel's page cache (root only): the case then reads the database cold. */
function dropCaches(): boolean {
  if (values.warm) return false;
  try {
    execFileSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

const randomAfter = (limit: number) =>
  range.oldest - 1 + Math.floor(Math.random() * Math.max(1, range.latest - range.oldest - limit));

interface Row {
  case: string;
  p50: number;
  p90: number;
  max: number;
  goal: string;
  met: boolean;
  cold: boolean;
  note?: string;
}
const rows: Row[] = [];

/** `requests` GETs one after another against a fresh server, each read to the end; ms per request. */
async function timed(
  name: string,
  url: () => string,
  goal: { p50: number; text: string },
  check?: (body: any) => string | undefined,
): Promise<void> {
  if (values.only && !values.only.split(',').some((o) => name.includes(o))) return;
  const cold = dropCaches();
  const server = await startServer(database.url);
  try {
    const times: number[] = [];
    let note: string | undefined;
    for (let i = 0; i < requests; i++) {
      const started = performance.now();
      const res = await fetch(`${server.base}${url()}`, { headers });
      const bytes = await res.arrayBuffer();
      // Timed to the answer's last byte; parsing it is the client's cost, left out.
      times.push(performance.now() - started);
      const body = JSON.parse(Buffer.from(bytes).toString('utf8'));
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
      note ??= check?.(body);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(times.length * q))] * 10) / 10;
    rows.push({
      case: name,
      p50: at(0.5),
      p90: at(0.9),
      max: at(1),
      goal: goal.text,
      met: at(0.5) <= goal.p50,
      cold,
      note,
    });
    console.error(
      `${name}: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms${cold ? ' (page cache dropped first)' : ''}`,
    );
  } finally {
    await server.stop();
  }
}

const full = (limit: number) => (body: any) =>
  body.items.length === limit ? undefined : `a page held ${body.items.length}`;
await timed(
  'page of 100 at a random place',
  () => `/api/v1/events?after=${randomAfter(100)}&limit=100`,
  { p50: 5, text: 'p50 ≤ 5 ms' },
  full(100),
);
await timed(
  'page of 1000 at a random place',
  () => `/api/v1/events?after=${randomAfter(1000)}&limit=1000`,
  { p50: 25, text: 'p50 ≤ 25 ms' },
  full(1000),
);
await timed('types=invoice.* from the start', () => '/api/v1/events?after=0&limit=100&types=invoice.*', {
  p50: 10,
  text: 'p50 ≤ 10 ms',
});
await timed(
  'types=invoice.* at a random place',
  () => `/api/v1/events?after=${randomAfter(100)}&limit=100&types=invoice.*`,
  { p50: 10, text: 'p50 ≤ 10 ms' },
);
await timed(
  'types=order.created,invoice.* at a random place',
  () => `/api/v1/events?after=${randomAfter(100)}&limit=100&types=order.created,invoice.*`,
  { p50: 10, text: 'p50 ≤ 10 ms' },
);
await timed(
  'resourceType=buyer at a random place',
  () => `/api/v1/events?after=${randomAfter(100)}&limit=100&resourceType=buyer`,
  { p50: 10, text: 'p50 ≤ 10 ms' },
);

let exported: Awaited<ReturnType<typeof measureExport>> | undefined;
if (!values.only || values.only.includes('export')) {
  const cold = dropCaches();
  const server = await startServer(database.url);
  try {
    exported = await measureExport(server.base, { headers } as never, server.pid);
    console.error(
      `export: ${exported.records} orders in ${exported.seconds} s (${exported.recordsPerSecond}/s), server RSS ${exported.rssMb} MB${cold ? ' (page cache dropped first)' : ''}`,
    );
  } finally {
    await server.stop();
  }
}

const m = machine(loadavg());
console.log(
  `\nFeed at ${range.latest.toLocaleString('en')} events; ${m.cpus} × ${m.model}, ${m.memoryGb} GB, Node ${m.node}, load ${m.loadAverage.map((l) => l.toFixed(1)).join(' ')}\n`,
);
console.log('| Case | p50 | p90 | max | Goal | Met |');
console.log('|---|---:|---:|---:|---|---|');
for (const r of rows)
  console.log(
    `| ${r.case}${r.cold ? ' (cold)' : ''} | ${r.p50} ms | ${r.p90} ms | ${r.max} ms | ${r.goal} | ${r.met ? 'yes' : 'no'}${r.note ? ` (${r.note})` : ''} |`,
  );
if (exported) {
  console.log(
    `| GET /orders/export | ${exported.recordsPerSecond.toLocaleString('en')} orders/s, RSS ${exported.rssMb} MB | | | ≥ 20,000/s, RSS ≤ 250 MB | ${exported.recordsPerSecond >= 20_000 && exported.rssMb <= 250 ? 'yes' : 'no'} |`,
  );
}
await database.drop();
