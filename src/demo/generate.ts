import { sql, type Kysely } from 'kysely';
import { createBusiness } from '../businesses/service.ts';
import { withBulkLoad, withIndexesDeferred, type BulkLoad } from '../db/bulk-load.ts';
import type { Database, Db } from '../db/types.ts';
import { insertRows } from '../db/bulk.ts';
import { newId } from '../lib/ids.ts';
import { createWriteRunner, SYSTEM, type WriteRunner } from '../write/runner.ts';
import { createProjectionLoad, type ProjectionLoad } from '../orders/read-model/index.ts';
import { rebuildShipmentCounts } from '../fulfilment/shipment-counts.ts';
import { createDemoEvents, insertCatalogueEvents, type DemoEvents } from './events.ts';
import { insertBuyers, insertCatalogue, type Buyer } from './catalogue.ts';
import { insertOrders, makeOrders } from './orders.ts';
import { createRandom, type Random } from './random.ts';

export interface DemoOptions {
  orders: number;
  items: number;
  buyers: number;
  name?: string;
  /** The same seed gives the same data (ids and the key differ). */
  seed?: number;
  onProgress?: (ordersDone: number) => void;
  /** Derived-count keys held before writing (tests make it small). */
  countKeysHeld?: number;
}

export interface DemoResult {
  businessId: string;
  apiKey: string;
  orders: number;
  orderItems: number;
  shipments: number;
  events: number;
  items: number;
  variants: number;
  buyers: number;
  /** Order generation, the part that scales. */
  orderSeconds: number;
  ordersPerSecond: number;
  /** CPU time: steadier than wall time on a busy machine. */
  orderCpuSeconds: number;
  totalSeconds: number;
}

export const DEMO_DEFAULTS = { orders: 300, items: 40, buyers: 20 } as const;

/** Orders per batch: most of what the load holds in memory. */
const BATCH = 500;
/** Orders per transaction while indexes are kept up: amortises commits, keeps the WAL in check. */
const PER_TRANSACTION = 50_000;
const TWO_YEARS = 730 * 86_400_000;

/**
 * A new business with a realistic catalogue, buyers, price lists and two years of orders, in large
 * multi-row transactions; the order counter ends at the order count, so the API's next SO follows.
 */
export async function generateDemo(db: Kysely<Database>, options: DemoOptions): Promise<DemoResult> {
  const started = performance.now();
  const result = await withBulkLoad(db, LOADED_TABLES, (bulk) => generate(db, options, started, bulk));
  return { ...result, totalSeconds: (performance.now() - started) / 1000 };
}

const LOADED_TABLES = [
  'orders',
  'order_items',
  'order_properties',
  'order_counts',
  'order_property_counts',
  'order_change_counts',
  'order_created_counts',
  'order_deleted_counts',
  'order_deleted_properties',
  'order_deleted_property_counts',
  'order_deleted_change_counts',
  'shipments',
  'shipment_counts',
  'shipment_change_counts',
  'business_counters',
  'items',
  'item_variants',
  'item_lists',
  'item_list_entries',
  'phantoms',
  'partnerships',
];

/** The bulk of the load: their secondary indexes are made afterwards when no other business has rows there. */
const BULK_TABLES = [
  'orders',
  'order_items',
  'order_properties',
  'order_deleted_properties',
  'shipments',
  'events',
] as const;

/** True on a new database (the benchmark's). */
async function holdsOnlyThisBusiness(trx: Db, businessId: string): Promise<boolean> {
  for (const table of BULK_TABLES) {
    const other = await sql`select 1 from ${sql.table(table)} where business_id <> ${businessId} limit 1`.execute(trx);
    if (other.rows.length > 0) return false;
  }
  return true;
}

interface OrderLoad {
  writes: WriteRunner;
  businessId: string;
  buyers: Buyer[];
  options: DemoOptions;
  times: { startMs: number; nowMs: number };
  rnd: Random;
  projections: ProjectionLoad;
  events: DemoEvents;
  /** Shipments made so far. */
  shipments: number;
}

/**
 * Every order; returns the number of order items. Into empty tables, when one transaction may hold
 * the load, with indexes made afterwards; otherwise PER_TRANSACTION per transaction.
 */
async function insertAllOrders(load: OrderLoad, bulk: BulkLoad): Promise<number> {
  const { writes, businessId, options } = load;
  const scope = { businessId, actor: SYSTEM };
  if (bulk.oneTransaction && options.orders > 0) {
    const items = await writes.run(scope, async ({ trx }) =>
      (await holdsOnlyThisBusiness(trx, businessId))
        ? withIndexesDeferred(trx, BULK_TABLES, () => insertOrderRange(trx, load, 0, options.orders))
        : null,
    );
    if (items !== null) return items;
  }
  let orderItems = 0;
  for (let done = 0; done < options.orders || done === 0; done += PER_TRANSACTION) {
    const end = Math.min(options.orders, done + PER_TRANSACTION);
    orderItems += await writes.run(scope, ({ trx }) => insertOrderRange(trx, load, done, end));
    if (options.orders === 0) break;
  }
  return orderItems;
}

/**
 * Orders first+1 to end in the caller's transaction; returns the item count. Each batch is made
 * while the previous is written. The last range also sets the order counter and derived tables.
 */
async function insertOrderRange(trx: Db, load: OrderLoad, from: number, end: number): Promise<number> {
  const { businessId, buyers, options, times, rnd, projections, events } = load;
  // Orders end a minute before now, so everything the benchmark creates sorts after them.
  const stepMs = options.orders === 0 ? 0 : (TWO_YEARS - 60_000) / options.orders;
  let orderItems = 0;
  let writing: Promise<void> = Promise.resolve();
  for (let first = from; first < end; first += BATCH) {
    const count = Math.min(BATCH, end - first);
    const made = makeOrders(
      businessId,
      buyers,
      { firstSequence: first + 1, count, stepMs, ...times },
      rnd,
      projections.batch(),
      events.batch(),
    );
    orderItems += made.items.length;
    load.shipments += made.shipments.length;
    await writing;
    options.onProgress?.(first);
    writing = insertOrders(trx, businessId, made);
    // Awaited at the next turn; meanwhile a failure must not count as unhandled.
    writing.catch(() => {});
  }
  await writing;
  options.onProgress?.(end);
  if (end === options.orders && options.orders > 0) {
    await insertRows(
      trx,
      'business_counters',
      ['business_id', 'name', 'value'],
      [[businessId, 'order', options.orders]],
    );
    // The counts every API write keeps, from the orders and shipments as made.
    await projections.finish(trx);
    await rebuildShipmentCounts(trx, businessId);
  }
  return orderItems;
}

async function generate(
  db: Kysely<Database>,
  options: DemoOptions,
  started: number,
  bulk: BulkLoad,
): Promise<DemoResult> {
  const rnd = createRandom(options.seed ?? 20_261_122);
  const nowMs = Date.now();
  const startMs = nowMs - TWO_YEARS;
  const catalogueMs = startMs - 30 * 86_400_000;
  const writes = createWriteRunner(db, { clock: () => nowMs });
  const setup = await writes.run({ businessId: newId('bus'), actor: SYSTEM }, async ({ trx, ...ctx }) => {
    const business = await createBusiness({ trx, ...ctx }, options.name ?? 'Demo Wholesale Supplies');
    const variants = await insertCatalogue(
      trx,
      business.businessId,
      business.defaultItemListId,
      options.items,
      rnd,
      catalogueMs,
    );
    const buyers = await insertBuyers(
      trx,
      business.businessId,
      business.defaultItemListId,
      variants,
      options.buyers,
      rnd,
      catalogueMs,
    );
    return { business, variants, buyers };
  });
  const { businessId } = setup.business;
  // The events the data implies, so the feed and exports are measured at realistic sizes.
  const events = await writes.run({ businessId, actor: SYSTEM }, async ({ trx }) => {
    const log = await createDemoEvents(trx, businessId);
    await insertCatalogueEvents(trx, businessId, log);
    return log;
  });

  const ordersStarted = performance.now();
  const cpuStarted = process.cpuUsage();
  const load = {
    writes,
    businessId,
    buyers: setup.buyers,
    options,
    times: { startMs, nowMs },
    rnd,
    projections: createProjectionLoad(businessId, options.countKeysHeld),
    events,
    shipments: 0,
  };
  const orderItems = await insertAllOrders(load, bulk).finally(() => events.close());
  const orderSeconds = (performance.now() - ordersStarted) / 1000;
  const cpu = process.cpuUsage(cpuStarted);
  return {
    businessId,
    apiKey: setup.business.apiKey,
    orders: options.orders,
    orderItems,
    shipments: load.shipments,
    events: events.sequence,
    items: options.items,
    variants: setup.variants.length,
    buyers: options.buyers,
    orderSeconds,
    ordersPerSecond: orderSeconds > 0 ? Math.round(options.orders / orderSeconds) : 0,
    orderCpuSeconds: (cpu.user + cpu.system) / 1e6,
    totalSeconds: (performance.now() - started) / 1000,
  };
}
