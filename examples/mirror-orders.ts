// Keeps a local copy of a business's orders in a JSON file: the export once, then the event feed.
// After catching up it compares the copy with a fresh export and exits 1 when they differ.
//
//   SUPPLYLINE_URL=http://localhost:3000 SUPPLYLINE_BUSINESS_ID=bus_... SUPPLYLINE_API_KEY=... \
//     npx tsx examples/mirror-orders.ts orders.json [--follow]
//
// Without --follow it stops once the feed is idle; with it, it keeps following until Ctrl-C.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { createSupplylineClient, ResyncRequiredError, type Order } from '../clients/typescript/src/index.ts';

interface Mirror { sequence: number; orders: Record<string, Order> }

const file = process.argv[2] ?? 'orders-mirror.json';
const keepFollowing = process.argv.includes('--follow');
const client = createSupplylineClient({
  baseUrl: process.env.SUPPLYLINE_URL ?? 'http://localhost:3000',
  businessId: process.env.SUPPLYLINE_BUSINESS_ID!,
  apiKey: process.env.SUPPLYLINE_API_KEY!,
});

const save = (mirror: Mirror) => {
  writeFileSync(`${file}.tmp`, JSON.stringify(mirror, null, 2));
  renameSync(`${file}.tmp`, file);
};

async function run(mirror: Mirror | null): Promise<Mirror> {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  let current = mirror ?? { sequence: 0, orders: {} };
  const options = {
    types: ['order.*'], waitSeconds: keepFollowing ? 25 : 1, signal: stop.signal,
    onCheckpoint: (sequence: number) => {
      const idle = sequence === current.sequence;
      current.sequence = sequence;
      save(current);
      if (idle && !keepFollowing) stop.abort();
    },
  };
  const events = mirror
    ? client.events.follow({ ...options, after: mirror.sequence })
    : client.orders.exportThenFollow({
      ...options,
      onSnapshot: (orders, sequence) => {
        current = { sequence, orders: Object.fromEntries(orders.map((o) => [o.id, o])) };
        save(current);
        console.log(`loaded ${orders.length} orders from the export at event ${sequence}`);
      },
    });
  for await (const event of events) {
    if (event.type === 'order.deleted') delete current.orders[event.resourceId];
    else current.orders[event.resourceId] = event.data.object as unknown as Order;
  }
  return current;
}

let mirror: Mirror | null = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
try {
  mirror = await run(mirror);
} catch (error) {
  if (!(error instanceof ResyncRequiredError)) throw error;
  console.log(`${error.message}: starting again from an export`);
  mirror = await run(null);
}

// The proof: the copy equals the server's orders as a fresh export shows them.
const server = await client.orders.export();
const theirs = Object.fromEntries(server.orders.map((o) => [o.id, o]));
if (server.sequence === mirror.sequence && !isDeepStrictEqual(theirs, mirror.orders)) {
  console.error(`mirror differs from the server at event ${mirror.sequence}`);
  process.exit(1);
}
const same = isDeepStrictEqual(theirs, mirror.orders);
console.log(`${same ? 'in sync' : 'behind (the server moved on meanwhile)'}: ${Object.keys(mirror.orders).length} orders at event ${mirror.sequence}`);
process.exit(same ? 0 : 2);
