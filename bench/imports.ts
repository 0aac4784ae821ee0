/**
 * Bulk import throughput (issue 47's goals): lines per second for item creates with two variants
 * and for orders of five lines, through a real server (the bundle `npm start` runs), with the
 * server's peak RSS. `npx tsx bench/imports.ts --db sqlite|postgres [--items N] [--orders N]`.
 * Goals: 5,000 and 2,000 lines/s (SQLite), 2,000 and 800 (PostgreSQL); RSS at most 300 MB.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from './database.ts';
import { machine } from './report.ts';
import { buildDist, runDemo, sampleRss, startServer } from './server.ts';

const { values } = parseArgs({ options: { db: { type: 'string', default: 'sqlite' }, items: { type: 'string', default: '10000' }, orders: { type: 'string', default: '5000' } } });
const backend = values.db === 'postgres' ? 'postgres' : 'sqlite';
const GOALS = { sqlite: { items: 5000, orders: 2000 }, postgres: { items: 2000, orders: 800 } }[backend];

buildDist();
const database = await createBenchDatabase(backend);
const demo = await runDemo(database.url, 10);
const server = await startServer(database.url);
const headers = { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey };
const rss = sampleRss(server.pid);

async function run(label: string, lines: string[]): Promise<number> {
  const posted = await fetch(`${server.base}/api/v1/imports`, { method: 'POST', body: `${lines.join('\n')}\n`, headers: { ...headers, 'content-type': 'application/x-ndjson' } });
  const { id } = await posted.json() as { id: string };
  if (posted.status !== 202) throw new Error(`${label}: ${posted.status}`);
  for (;;) {
    const imp = await (await fetch(`${server.base}/api/v1/imports/${id}`, { headers })).json() as { state: string; linesPerSecond: number; counts: { failed: number } };
    if (imp.state === 'COMPLETED' || imp.state === 'STOPPED') {
      if (imp.counts.failed > 0) throw new Error(`${label}: ${imp.counts.failed} lines failed`);
      return imp.linesPerSecond;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

try {
  const itemCount = Number(values.items);
  const items = Array.from({ length: itemCount }, (_, i) => JSON.stringify({
    op: 'create', resource: 'item', ref: `i${i}`,
    data: { item: { name: `Bench item ${i}` }, variants: [{ variantName: '500g', currency: 'AUD', price: 10, cost: 4 }, { variantName: '1kg', currency: 'AUD', price: 18, cost: 7 }] },
  }));
  const itemRate = await run('items', items);
  const buyer = JSON.stringify({ op: 'create', resource: 'buyer', ref: 'b', data: { buyer: { name: 'Bench buyer' } } });
  const orderLines = Array.from({ length: Number(values.orders) }, (_, i) => JSON.stringify({
    op: 'create', resource: 'order', buyerId: { $ref: 'b' },
    data: {
      expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
      orderItems: Array.from({ length: 5 }, (_, k) => ({ itemVariantId: { $ref: 'v', variant: k % 2 }, quantity: k + 1 })).filter((_, k) => k < 2)
        .concat(Array.from({ length: 3 }, (_, k) => ({ itemVariantId: { $ref: `w${k}`, variant: 0 }, quantity: 1 }))),
    },
  }));
  const catalogue = [buyer, ...['v', 'w0', 'w1', 'w2'].map((ref) => JSON.stringify({
    op: 'create', resource: 'item', ref, data: { item: { name: `Order item ${ref}` }, variants: [{ variantName: 'a', currency: 'AUD', price: 3 }, { variantName: 'b', currency: 'AUD', price: 4 }] },
  }))];
  const orderRate = await run('orders', [...catalogue, ...orderLines]);
  const peak = Math.round(rss());
  console.log(`# imports on ${backend} (${JSON.stringify(machine(loadavg()))}):`);
  console.log(`item creates, two variants: ${itemRate} lines/s (goal ${GOALS.items})`);
  console.log(`orders of five lines:       ${orderRate} lines/s (goal ${GOALS.orders})`);
  console.log(`server peak RSS:            ${peak} MB (goal 300)`);
} finally {
  await server.stop();
  await database.drop();
}
