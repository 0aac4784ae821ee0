// Keeps a local copy of a business's orders: the export once, then the event feed. The copy is a
// snapshot file plus a journal beside it (`FILE.journal`), one line appended per checkpoint with the
// orders that changed, so a checkpoint costs what changed, not the whole copy; the journal is folded
// into the snapshot when it grows and at the end. After catching up it compares the copy with a
// fresh export, streamed, and exits 1 when they differ (2 when the server moved on meanwhile).
//
//   npm install @supplyline/client
//   SUPPLYLINE_URL=http://localhost:3000 SUPPLYLINE_BUSINESS_ID=bus_... SUPPLYLINE_API_KEY=... \
//     node mirror-orders.ts orders.json [--follow]     (Node 22.18+; on Node 20: npx tsx mirror-orders.ts)
//
// Without --follow it stops once the feed is idle; with it, it keeps following until Ctrl-C. A
// second Ctrl-C while the final check runs does not cut it short (a third, or SIGTERM, does).
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { createSupplylineClient, ResyncRequiredError, type Order } from '@supplyline/client';

interface Snapshot {
  sequence: number;
  orders: Record<string, Order>;
}
/** One journal line: the sequence reached, and the orders changed or deleted up to it. */
interface Entry {
  sequence: number;
  upserts?: Order[];
  deletes?: string[];
}

const file = process.argv[2] ?? 'orders-mirror.json';
const journal = `${file}.journal`;
const keepFollowing = process.argv.includes('--follow');
const COMPACT_AFTER = 1000;
let journalLines = 0;
const client = createSupplylineClient({
  baseUrl: process.env.SUPPLYLINE_URL ?? 'http://localhost:3000',
  businessId: process.env.SUPPLYLINE_BUSINESS_ID!,
  apiKey: process.env.SUPPLYLINE_API_KEY!,
});

// The first Ctrl-C stops following; later ones are noted while the final check finishes, and the third ends it.
const stop = new AbortController();
let interrupts = 0;
process.on('SIGINT', () => {
  if (++interrupts === 1) stop.abort();
  else if (interrupts === 2) console.log('finishing the final check (Ctrl-C again to quit without it)');
  else process.exit(130);
});

function load(): Snapshot | null {
  if (!existsSync(file)) return null;
  const mirror = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  if (!existsSync(journal)) return mirror;
  // A line cut short by a crash during its append is the last, and is left out.
  const lines = readFileSync(journal, 'utf8')
    .split('\n')
    .filter((line) => line.endsWith('}'));
  for (const line of lines) {
    const entry = JSON.parse(line) as Entry;
    for (const order of entry.upserts ?? []) mirror.orders[order.id] = order;
    for (const id of entry.deletes ?? []) delete mirror.orders[id];
    mirror.sequence = entry.sequence;
  }
  journalLines = lines.length;
  return mirror;
}

/** Writes the whole copy (atomically, by rename) and empties the journal. */
function compact(mirror: Snapshot) {
  writeFileSync(`${file}.tmp`, JSON.stringify(mirror));
  renameSync(`${file}.tmp`, file);
  rmSync(journal, { force: true });
  journalLines = 0;
}

async function run(mirror: Snapshot | null): Promise<Snapshot> {
  let current: Snapshot = mirror ?? { sequence: 0, orders: {} };
  let changed = new Map<string, Order | null>();
  const options = {
    types: ['order.*'],
    waitSeconds: keepFollowing ? 25 : 1,
    signal: stop.signal,
    onCheckpoint: (sequence: number) => {
      const idle = sequence === current.sequence && changed.size === 0;
      current.sequence = sequence;
      if (!idle) {
        const entry: Entry = {
          sequence,
          upserts: [...changed.values()].filter((o) => o !== null),
          deletes: [...changed].filter(([, o]) => o === null).map(([id]) => id),
        };
        appendFileSync(journal, `${JSON.stringify(entry)}\n`);
        changed = new Map();
        if (++journalLines >= COMPACT_AFTER) compact(current);
      }
      if (idle && !keepFollowing) stop.abort();
    },
  };
  const events = mirror
    ? client.events.follow({ ...options, after: mirror.sequence })
    : client.orders.exportThenFollow({
        ...options,
        onSnapshot: async (orders, sequence) => {
          current = { sequence, orders: {} };
          for await (const order of orders) current.orders[order.id] = order;
          compact(current);
          console.log(`loaded ${Object.keys(current.orders).length} orders from the export at event ${sequence}`);
        },
      });
  for await (const event of events) {
    if (event.resourceType !== 'order') continue;
    if (event.type === 'order.deleted') {
      delete current.orders[event.resourceId];
      changed.set(event.resourceId, null);
    } else {
      current.orders[event.resourceId] = event.data.object;
      changed.set(event.resourceId, event.data.object);
    }
  }
  return current;
}

let mirror = load();
try {
  mirror = await run(mirror);
} catch (error) {
  if (!(error instanceof ResyncRequiredError)) throw error;
  console.log(`${error.message}: starting again from an export`);
  mirror = await run(null);
}
compact(mirror);

// The proof: the copy equals the server's orders as a fresh export shows them, compared as it streams.
const server = await client.orders.export();
let same = true;
let seen = 0;
for await (const order of server) {
  seen++;
  if (same && !isDeepStrictEqual(order, mirror.orders[order.id])) same = false;
}
same &&= seen === Object.keys(mirror.orders).length;
if (server.sequence === mirror.sequence && !same) {
  console.error(`mirror differs from the server at event ${mirror.sequence}`);
  process.exit(1);
}
console.log(
  `${same ? 'in sync' : 'behind (the server moved on meanwhile)'}: ${Object.keys(mirror.orders).length} orders at event ${mirror.sequence}`,
);
process.exit(same ? 0 : 2);
