/**
 * The statements PostgreSQL receives for one request of each kind (PATCH, create, ingestion, an
 * import of three item lines, a cached GET), read from the server's log with `log_statement = all`
 * set on a database of its own: what a write holds its business's lock across, one round trip a
 * line. `npx tsx bench/statements.ts [--log /var/log/postgresql/postgresql-15-main.log]`; needs a
 * local PostgreSQL whose log it may read (BENCH_DATABASE_URL, as bench/database.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createBenchDatabase } from './database.ts';
import { buildDist, runDemo, startServer } from './server.ts';

const { values } = parseArgs({
  options: { log: { type: 'string', default: '/var/log/postgresql/postgresql-15-main.log' } },
});
const log = values.log;

buildDist();
const database = await createBenchDatabase('postgres');
const name = new URL(database.url).pathname.slice(1);
const admin = async (statement: string) => {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await client.query(statement).finally(() => client.end());
};
const demo = await runDemo(database.url, 30);
await admin(`alter database ${name} set log_statement = 'all'`);
const server = await startServer(database.url);
const headers = { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey, 'content-type': 'application/json' };
const api = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => {
  const res = await fetch(`${server.base}/api/v1${path}`, {
    method,
    headers: { ...headers, ...extra },
    body: typeof body === 'string' || body === undefined ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
};

/** Runs `request` once to prepare its statements, then again, and prints what the second sent. */
async function count(label: string, request: () => Promise<unknown>): Promise<void> {
  await request();
  await sleep(300);
  const start = statSync(log).size;
  await request();
  await sleep(500);
  const lines = readFileSync(log)
    .subarray(start)
    .toString()
    .split('\n')
    .filter((l) => / LOG: {2}(statement|execute)/.test(l) && !/webhook|claim|pg_stat/.test(l));
  console.log(`\n${label}: ${lines.length} statements`);
  for (const l of lines) console.log(`  ${l.replace(/^.*?LOG: {2}/, '').slice(0, 140)}`);
}

try {
  const orders = (await api('GET', '/orders?limit=5')).items;
  const buyer = (await api('GET', '/buyers?limit=1')).items[0];
  const variants = (await api('GET', '/items?limit=10')).items.flatMap((i: any) => i.variants.map((v: any) => v.id));
  let n = 0;
  await count('PATCH an order (a property and an item quantity)', () =>
    api('PATCH', `/orders/${orders[0].id}`, {
      order: { properties: { bench: { n: ++n } } },
      updateOrderItems: [{ id: orders[0].orderItems[0].id, quantity: n + 1 }],
    }),
  );
  await count('create an order of 5 items', () =>
    api('POST', `/buyers/${buyer.id}/orders`, {
      expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
      orderItems: variants.slice(0, 5).map((v: string) => ({ itemVariantId: v, quantity: 2 })),
    }),
  );
  const announce = (o: { id: string }) =>
    api(
      'POST',
      '/orders',
      { orderId: o.id, businessId: demo.businessId },
      {
        'idempotency-key': createHash('sha256').update(`${o.id}-${demo.businessId}-order-integration`).digest('hex'),
      },
    );
  let k = 1;
  await count('ingestion, first announcement', () => announce(orders[k++]));
  await count('ingestion, a repeat', () => announce(orders[1]));
  const itemLine = () =>
    JSON.stringify({
      op: 'create',
      resource: 'item',
      data: {
        item: { name: `Counted ${++n}` },
        variants: [
          { variantName: 'a', currency: 'AUD', price: 10, cost: 4 },
          { variantName: 'b', currency: 'AUD', price: 18, cost: 7 },
        ],
      },
    });
  /** An import of three lines made by `line`, until it has finished. */
  const importOf3 = (line: () => string) => async () => {
    const res = await fetch(`${server.base}/api/v1/imports`, {
      method: 'POST',
      body: `${line()}\n${line()}\n${line()}\n`,
      headers: { ...headers, 'content-type': 'application/x-ndjson' },
    });
    const { id } = (await res.json()) as { id: string };
    while (['QUEUED', 'RUNNING'].includes((await api('GET', `/imports/${id}`)).state)) await sleep(50);
  };
  await count('import of 3 item lines of 2 variants', importOf3(itemLine));
  const orderLine = () =>
    JSON.stringify({
      op: 'create',
      resource: 'order',
      buyerId: buyer.id,
      data: {
        expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
        externalReference: `Counted ${++n}`,
        orderItems: variants.slice(0, 5).map((v: string) => ({ itemVariantId: v, quantity: 2 })),
      },
    });
  await count('import of 3 order lines of 5 items', importOf3(orderLine));
  await count('GET an order (cached)', () => api('GET', `/orders/${orders[0].id}`));
} finally {
  await server.stop();
  await database.drop();
}
