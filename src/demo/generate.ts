import type { Kysely } from 'kysely';
import { createBusiness } from '../businesses/service.ts';
import { withBulkLoad } from '../db/bulk-load.ts';
import type { Database } from '../db/types.ts';
import { insertRows } from '../db/bulk.ts';
import { newId } from '../lib/ids.ts';
import { createWriteRunner, SYSTEM } from '../write/runner.ts';
import { rebuildOrderProjections } from '../orders/projections/index.ts';
import { insertDemoEvents } from './events.ts';
import { insertBuyers, insertCatalogue } from './catalogue.ts';
import { insertOrders } from './orders.ts';
import { createRandom } from './random.ts';

export interface DemoOptions {
  orders: number;
  items: number;
  buyers: number;
  name?: string;
  /** The same seed gives the same catalogue, buyers and orders (ids and the key differ). */
  seed?: number;
  onProgress?: (ordersDone: number) => void;
  /** Orders whose events are written, after the orders themselves. */
  onEventProgress?: (ordersDone: number) => void;
}

export interface DemoResult {
  businessId: string;
  apiKey: string;
  orders: number;
  orderItems: number;
  /** Events in the business's log afterwards. */
  events: number;
  items: number;
  variants: number;
  buyers: number;
  /** Order generation only (orders and their items), the part that scales. */
  orderSeconds: number;
  /** Writing the events the data implies (after the orders). */
  eventSeconds: number;
  ordersPerSecond: number;
  /** CPU time of this process for the orders: steadier than wall time on a busy machine. */
  orderCpuSeconds: number;
  totalSeconds: number;
}

export const DEMO_DEFAULTS = { orders: 300, items: 40, buyers: 20 } as const;

const BATCH = 5_000;
/** One transaction per this many orders: large enough to amortise commits, small enough to keep the WAL in check. */
const PER_TRANSACTION = 50_000;
const TWO_YEARS = 730 * 86_400_000;

/**
 * A new business with a realistic catalogue, buyers, price lists and orders spread over the last
 * two years. Rows go in with multi-row INSERTs in large transactions; the order counter ends equal
 * to the number of orders, so the next order created through the API gets the next SO number.
 */
export async function generateDemo(db: Kysely<Database>, options: DemoOptions): Promise<DemoResult> {
  const started = performance.now();
  const result = await withBulkLoad(db, LOADED_TABLES, () => generate(db, options, started));
  // In all: with PostgreSQL's vacuum after the load.
  return { ...result, totalSeconds: (performance.now() - started) / 1000 };
}

/** The tables generation fills, and the ones the catalogue and buyers went into. */
const LOADED_TABLES = [
  'orders', 'order_items', 'order_properties', 'order_counts', 'order_property_counts', 'order_change_counts', 'order_created_counts', 'business_counters',
  'items', 'item_variants', 'item_lists', 'item_list_entries', 'phantoms', 'partnerships',
];

async function generate(db: Kysely<Database>, options: DemoOptions, started: number): Promise<DemoResult> {
  const rnd = createRandom(options.seed ?? 20_261_122);
  const nowMs = Date.now();
  const startMs = nowMs - TWO_YEARS;
  const catalogueMs = startMs - 30 * 86_400_000;
  const writes = createWriteRunner(db, { clock: () => nowMs });
  const setup = await writes.run({ businessId: newId('bus'), actor: SYSTEM }, async ({ trx, ...ctx }) => {
    const business = await createBusiness({ trx, ...ctx }, options.name ?? 'Demo Wholesale Supplies');
    const variants = await insertCatalogue(trx, business.businessId, business.defaultItemListId, options.items, rnd, catalogueMs);
    const buyers = await insertBuyers(trx, business.businessId, business.defaultItemListId, variants, options.buyers, rnd, catalogueMs);
    return { business, variants, buyers };
  });
  const { businessId } = setup.business;

  const ordersStarted = performance.now();
  const cpuStarted = process.cpuUsage();
  // Orders end a minute before now, so that everything the benchmark creates sorts after them.
  const stepMs = options.orders === 0 ? 0 : (TWO_YEARS - 60_000) / options.orders;
  let done = 0;
  let orderItems = 0;
  while (done < options.orders || done === 0) {
    const end = Math.min(options.orders, done + PER_TRANSACTION);
    await writes.run({ businessId, actor: SYSTEM }, async ({ trx }) => {
      for (let first = done; first < end; first += BATCH) {
        const count = Math.min(BATCH, end - first);
        orderItems += await insertOrders(trx, businessId, setup.buyers, { firstSequence: first + 1, count, startMs, stepMs, nowMs }, rnd);
        options.onProgress?.(first + count);
      }
      if (end === options.orders && options.orders > 0) {
        await insertRows(trx, 'business_counters', ['business_id', 'name', 'value'], [[businessId, 'order', options.orders]]);
        // The derived tables the API keeps in every write (counts, property index), from the orders as loaded.
        await rebuildOrderProjections(trx, businessId);
      }
    });
    done = end;
    if (options.orders === 0) break;
  }
  const orderSeconds = (performance.now() - ordersStarted) / 1000;
  // The events the data implies, so that the feed and exports are measured at realistic sizes.
  const eventsStarted = performance.now();
  const events = await writes.run({ businessId, actor: SYSTEM }, ({ trx }) => insertDemoEvents(trx, businessId, options.onEventProgress));
  const eventSeconds = (performance.now() - eventsStarted) / 1000;
  const cpu = process.cpuUsage(cpuStarted);
  return {
    businessId,
    apiKey: setup.business.apiKey,
    orders: options.orders,
    orderItems,
    events,
    items: options.items,
    variants: setup.variants.length,
    buyers: options.buyers,
    orderSeconds,
    eventSeconds,
    ordersPerSecond: orderSeconds > 0 ? Math.round(options.orders / orderSeconds) : 0,
    orderCpuSeconds: (cpu.user + cpu.system) / 1e6,
    totalSeconds: (performance.now() - started) / 1000,
  };
}
