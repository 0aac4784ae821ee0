/**
 * Bulk import throughput (issue 47's goals): lines per second for item creates with two variants
 * and for orders of five lines, through a real server (the bundle `npm start` runs), with the
 * server's peak RSS. `npx tsx bench/imports.ts --db sqlite|postgres [--items N] [--orders N] [--buyers N] [--shipments N]`.
 * `--url URL --business B --key K`: into a business of an existing database (for example one of
 * 10,000 or 1,000,000 orders made with `cli demo`), which is kept; its names carry the run's time,
 * so that runs on one business do not collide.
 * Shipments (issue 64): N shipment lines of one unit each, all of one order's line of N units, so that
 * each line checks the invariant against an order with up to N shipments already.
 * Goals: 5,000 and 2,000 lines/s (SQLite), 2,000 and 800 (PostgreSQL); RSS at most 300 MB.
 * Fairness: the p99 of the business's other requests (order lists, order reads, order patches, at a
 * fixed rate) while an import of items runs, beside their p99 without it, each over 10 s (about 500
 * answers: the import beside is sized to last that long); goal: at most 2×.
 */
import { readdirSync } from 'node:fs';
import { loadavg, setPriority } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from './database.ts';
import { machine } from './report.ts';
import { buildDist, runDemo, sampleRss, startServer } from './server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    items: { type: 'string', default: '10000' },
    orders: { type: 'string', default: '5000' },
    /** The buyers the orders are spread over, in turn. */
    buyers: { type: 'string', default: '1' },
    shipments: { type: 'string', default: '1500' },
    profile: { type: 'string' },
    'file-mb': { type: 'string', default: '0' },
    url: { type: 'string' },
    business: { type: 'string' },
    key: { type: 'string' },
    /**
     * This client's threads at the same priority as the server's (Linux). By default they run at a
     * higher one, so that the client is not late on the cores it shares with the server, its
     * checkpoint and collector threads and the database, as a client of its own machine would not
     * be (decision 0076).
     */
    'same-priority': { type: 'boolean', default: false },
  },
});
if (values.url && (!values.business || !values.key)) throw new Error('--url needs --business and --key');
const backend = (values.url ? !values.url.startsWith('sqlite:') : values.db === 'postgres') ? 'postgres' : 'sqlite';
const GOALS = { sqlite: { items: 5000, orders: 2000 }, postgres: { items: 2000, orders: 800 } }[backend];

buildDist();
const database = values.url ? { url: values.url, drop: async () => {} } : await createBenchDatabase(backend);
const demo = values.url ? { businessId: values.business!, apiKey: values.key! } : await runDemo(database.url, 10);
/** In names, which a business's items must not repeat: empty on a database of the benchmark's own. */
const tag = values.url ? ` ${Date.now().toString(36)}` : '';
const fileMb = Number(values['file-mb']);
// A large file takes longer to send than the default REQUEST_TIMEOUT_MS (15 s) allows.
const server = await startServer(database.url, values.profile, fileMb > 0 ? { REQUEST_TIMEOUT_MS: '600000' } : {});
const clientFirst = !values['same-priority'] && raisePriority();
/** Every thread of this process at niceness -10; false where that is not allowed (not root, not Linux). */
function raisePriority(): boolean {
  try {
    for (const tid of readdirSync('/proc/self/task')) setPriority(Number(tid), -10);
    return true;
  } catch {
    return false;
  }
}
const headers = { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey };
const rss = sampleRss(server.pid);

/** Starts an import; `wait` answers its lines per second once it has finished. */
async function start(label: string, lines: string[]) {
  const posted = await fetch(`${server.base}/api/v1/imports`, {
    method: 'POST',
    body: `${lines.join('\n')}\n`,
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
  });
  const { id } = (await posted.json()) as { id: string };
  if (posted.status !== 202) throw new Error(`${label}: ${posted.status}`);
  return {
    wait: () => finished(label, id),
    running: async () =>
      ((await (await fetch(`${server.base}/api/v1/imports/${id}`, { headers })).json()) as { state: string }).state ===
      'RUNNING',
  };
}

const run = async (label: string, lines: string[]) => (await start(label, lines)).wait();

async function finished(label: string, id: string): Promise<number> {
  for (;;) {
    const imp = (await (await fetch(`${server.base}/api/v1/imports/${id}`, { headers })).json()) as {
      state: string;
      linesPerSecond: number;
      counts: { failed: number };
    };
    if (imp.state === 'COMPLETED' || imp.state === 'STOPPED') {
      if (imp.counts.failed > 0) throw new Error(`${label}: ${imp.counts.failed} lines failed`);
      return imp.linesPerSecond;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The business's other requests at a fixed rate (open loop: a slow answer does not slow the next
 * request), for `seconds` or until `until` says stop: their p50 and p99 in ms.
 */
async function liveTraffic(seconds: number, until: () => Promise<boolean> = async () => true) {
  const orders = (
    (await (await fetch(`${server.base}/api/v1/orders?limit=10`, { headers })).json()) as { items: { id: string }[] }
  ).items;
  const times: number[] = [];
  /** Each answer's time and kind, to name the slowest. */
  const answers: Array<{ ms: number; kind: string }> = [];
  /** PATCHes wait for the import's batch (the business's write lock); reads do not. */
  const patches: number[] = [];
  const pending: Promise<void>[] = [];
  // This process's own lateness: on a 2-core machine with the server and an import busy, the client
  // may be scheduled late, and what it measures includes that.
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const ends = performance.now() + seconds * 1000;
  let i = 0;
  let checked = performance.now();
  while (performance.now() < ends) {
    if (performance.now() - checked > 1000) {
      checked = performance.now();
      if (!(await until())) break;
    }
    const order = orders[i % orders.length];
    const kind = i++ % 10;
    const request =
      kind < 5
        ? fetch(`${server.base}/api/v1/orders?limit=20`, { headers })
        : kind < 8
          ? fetch(`${server.base}/api/v1/orders/${order.id}`, { headers })
          : fetch(`${server.base}/api/v1/orders/${order.id}`, {
              method: 'PATCH',
              headers: { ...headers, 'content-type': 'application/json' },
              body: JSON.stringify({ order: { properties: { bench: { n: i } } } }),
            });
    const began = performance.now();
    pending.push(
      request.then(async (res) => {
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`live traffic: ${res.status}`);
        times.push(performance.now() - began);
        answers.push({ ms: performance.now() - began, kind: kind < 5 ? 'list' : kind < 8 ? 'get' : 'patch' });
        if (kind >= 8) patches.push(performance.now() - began);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000 / LIVE_RPS));
  }
  await Promise.all(pending);
  lag.disable();
  const at = (sample: number[], p: number) => {
    sample.sort((a, b) => a - b);
    return Math.round(sample[Math.min(sample.length - 1, Math.floor(sample.length * p))] * 10) / 10;
  };
  return {
    p50: at(times, 0.5),
    p99: at(times, 0.99),
    requests: times.length,
    patchP50: at(patches, 0.5),
    patchP95: at(patches, 0.95),
    clientLate: `p99 ${Math.round(lag.percentile(99) / 1e5) / 10} ms, max ${Math.round(lag.max / 1e5) / 10} ms`,
    slowest: answers
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map((a) => `${Math.round(a.ms)} ms ${a.kind}`)
      .join(', '),
  };
}
const LIVE_RPS = 50;

/**
 * `--file-mb N`: the server's RSS while it receives a file of N MB of item lines (generated as it is
 * sent, never held whole), and then for 30 s while it applies it.
 */
async function largeFile(mb: number) {
  const line = (i: number) =>
    `${JSON.stringify({
      op: 'create',
      resource: 'item',
      ref: `big${i}`,
      data: {
        item: { name: `Big ${i}`, description: 'x'.repeat(120) },
        variants: [
          { variantName: 'a', currency: 'AUD', price: 1 },
          { variantName: 'b', currency: 'AUD', price: 2 },
        ],
      },
    })}\n`;
  const bytes = mb * 1024 * 1024;
  let sent = 0;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      let text = '';
      while (text.length < 256 * 1024) text += line(i++);
      sent += text.length;
      controller.enqueue(new TextEncoder().encode(text));
    },
  });
  const receiving = sampleRss(server.pid);
  const began = performance.now();
  const posted = await fetch(`${server.base}/api/v1/imports`, {
    method: 'POST',
    body,
    duplex: 'half',
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
  } as RequestInit);
  const { id } = (await posted.json()) as { id: string };
  if (posted.status !== 202) throw new Error(`large file: ${posted.status}`);
  const seconds = (performance.now() - began) / 1000;
  const received = receiving();
  const applying = sampleRss(server.pid);
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  const imp = (await (await fetch(`${server.base}/api/v1/imports/${id}`, { headers })).json()) as {
    linesDone: number;
    lines: number;
  };
  console.log(
    `# a ${mb} MB file (${imp.lines.toLocaleString('en')} lines) on ${backend} (${JSON.stringify(machine(loadavg()))}):`,
  );
  console.log(
    `received in ${seconds.toFixed(1)} s, server peak RSS ${received} MB; then ${applying()} MB while it applied ${imp.linesDone.toLocaleString('en')} lines in 30 s (goal 300 MB)`,
  );
}

try {
  if (fileMb > 0) await largeFile(fileMb);
  else await throughput();
} finally {
  await server.stop();
  await database.drop();
}

async function throughput() {
  const itemCount = Number(values.items);
  const items = Array.from({ length: itemCount }, (_, i) =>
    JSON.stringify({
      op: 'create',
      resource: 'item',
      ref: `i${i}`,
      data: {
        item: { name: `Bench item${tag} ${i}` },
        variants: [
          { variantName: '500g', currency: 'AUD', price: 10, cost: 4 },
          { variantName: '1kg', currency: 'AUD', price: 18, cost: 7 },
        ],
      },
    }),
  );
  const itemRate = await run('items', items);
  const buyers = Math.max(1, Number(values.buyers));
  const buyerLines = Array.from({ length: buyers }, (_, b) =>
    JSON.stringify({
      op: 'create',
      resource: 'buyer',
      ref: `b${b}`,
      data: { buyer: { name: `Bench buyer${tag} ${b}` } },
    }),
  );
  const orderLines = Array.from({ length: Number(values.orders) }, (_, i) =>
    JSON.stringify({
      op: 'create',
      resource: 'order',
      buyerId: { $ref: `b${i % buyers}` },
      data: {
        expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
        orderItems: Array.from({ length: 5 }, (_, k) => ({
          itemVariantId: { $ref: 'v', variant: k % 2 },
          quantity: k + 1,
        }))
          .filter((_, k) => k < 2)
          .concat(Array.from({ length: 3 }, (_, k) => ({ itemVariantId: { $ref: `w${k}`, variant: 0 }, quantity: 1 }))),
      },
    }),
  );
  const catalogue = [
    ...buyerLines,
    ...['v', 'w0', 'w1', 'w2'].map((ref) =>
      JSON.stringify({
        op: 'create',
        resource: 'item',
        ref,
        data: {
          item: { name: `Order item${tag} ${ref}` },
          variants: [
            { variantName: 'a', currency: 'AUD', price: 3 },
            { variantName: 'b', currency: 'AUD', price: 4 },
          ],
        },
      }),
    ),
  ];
  const orderRate = await run('orders', [...catalogue, ...orderLines]);
  // `--shipments 0` leaves them out.
  const shipmentRate = Number(values.shipments) > 0 ? await shipmentsOfOneOrder(Number(values.shipments)) : null;
  const alone = await liveTraffic(10);
  // Long enough for the 10 s of traffic beside it, at the pace the items ran: a p99 of ~500 answers,
  // not of the ~100 a shorter import leaves (where it is the second slowest answer).
  const besideLines = Math.min(100_000, Math.max(itemCount, Math.ceil(itemRate * 12)));
  const busy = await start(
    'items beside live traffic',
    Array.from({ length: besideLines }, (_, i) => items[i % items.length].replace(/"ref":"i\d+/, `"ref":"j${i}`)),
  );
  while (!(await busy.running())) await new Promise((resolve) => setTimeout(resolve, 50));
  const beside = await liveTraffic(10, busy.running);
  await busy.wait();
  const peak = Math.round(rss());
  console.log(`# imports on ${backend} (${JSON.stringify(machine(loadavg()))}):`);
  console.log(`item creates, two variants: ${itemRate} lines/s (goal ${GOALS.items})`);
  console.log(`orders of five lines:       ${orderRate} lines/s (goal ${GOALS.orders})`);
  console.log(`shipments of one order:     ${shipmentRate} lines/s (${values.shipments} shipments of one unit each)`);
  console.log(`server peak RSS:            ${peak} MB (goal 300)`);
  console.log(
    `other requests at ${LIVE_RPS}/s:     p50 ${alone.p50} ms, p99 ${alone.p99} ms alone; p50 ${beside.p50} ms, p99 ${beside.p99} ms beside an import (${beside.requests} requests): ${Math.round((beside.p99 / alone.p99) * 100) / 100}× (goal at most 2×)`,
  );
  console.log(
    `  of which PATCHes:         p50 ${alone.patchP50} ms, p95 ${alone.patchP95} ms alone; p50 ${beside.patchP50} ms, p95 ${beside.patchP95} ms beside`,
  );
  console.log(`  the slowest beside:       ${beside.slowest} (alone: ${alone.slowest})`);
  console.log(
    `  this client late by:      ${beside.clientLate} beside; ${alone.clientLate} alone (its own event loop: a late client adds to the times above)`,
  );
  console.log(
    `  this client's priority:   ${clientFirst ? 'above the server and the database (niceness -10; --same-priority to leave it)' : 'the same as the server and the database'}`,
  );
}

/** `count` shipment lines, each one unit of the same order line of `count` units: lines per second. */
async function shipmentsOfOneOrder(count: number) {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.base}/api/v1${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as any;
  };
  const item = await post('/items', {
    item: { name: 'Shipped by the unit' },
    variants: [{ variantName: 'each', currency: 'AUD', price: 1 }],
  });
  const buyer = await post('/buyers', { buyer: { name: 'Bench consignee' } });
  const order = await post(`/buyers/${buyer.id}/orders`, {
    expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
    orderItems: [{ itemVariantId: item.variantIds[0], quantity: count }],
  });
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      op: 'create',
      resource: 'shipment',
      orderId: order.id,
      data: { trackingNumbers: [`BENCH${i}`], lines: [{ orderItemId: order.orderItems[0].id, quantity: 1 }] },
    }),
  );
  return run('shipments', lines);
}
