import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

const BATCH = 5_000;
const ROWS_PER_INSERT = 500;

/*
 * A frozen copy of the path encoding (src/orders/projections/properties.ts), unchanged since
 * migration 0005: a migration must give the same result whatever the application code later becomes.
 */
const SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/;
const MAX_SEGMENTS = 16;
const ANY_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

function canonicalNumber(text: string): string | null {
  const m = ANY_NUMBER.exec(text);
  if (!m) return null;
  let digits = (m[2] + (m[3] ?? '')).replace(/^0+/, '');
  if (digits === '') return '0e0';
  let exponent = BigInt(m[4] ?? '0') - BigInt((m[3] ?? '').length);
  const trimmed = digits.replace(/0+$/, '');
  exponent += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `${m[1]}${digits}e${exponent}`;
}

function scalarOf(value: unknown): string | null {
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'boolean') return `b:${value}`;
  if (typeof value === 'number') return Number.isFinite(value) ? `n:${canonicalNumber(String(value))}` : null;
  return null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function propertyPaths(properties: unknown): Array<{ path: string; value: string | null }> {
  const out: Array<{ path: string; value: string | null }> = [];
  const walk = (object: Record<string, unknown>, prefix: string, depth: number) => {
    for (const [key, value] of Object.entries(object)) {
      if (!SEGMENT.test(key)) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      out.push({ path, value: scalarOf(value) });
      if (isObject(value) && depth + 1 < MAX_SEGMENTS) walk(value, path, depth + 1);
    }
  };
  const parsed: unknown = typeof properties === 'string' ? JSON.parse(properties) : properties;
  if (isObject(parsed)) walk(parsed, '', 0);
  return out;
}

/**
 * Lists with `includeDeleted=true` at the cost of the live ones.
 *
 * - `order_deleted_counts(business_id, day, phase, status, shard, n)`: the number of soft-deleted
 *   orders per UTC day of `createdAt`, phase and status, beside `order_created_counts` (live
 *   orders). Their sum is every order, so such a list's total and its deep pages' day skipping read
 *   counts instead of `count(*)` over all orders (400–1,000 ms at 1M on SQLite). Only a soft delete
 *   writes it; the live tables and their writes are unchanged. `order_deleted_change_counts` is
 *   the same per UTC day of `updatedAt`, beside `order_change_counts`, for updatedSince totals.
 * - Indexes over all orders in list order by phase, by status, and by both (this one replaces
 *   `orders_business_phase_status_idx`, which lacked the `id` tie-break): the live ones are
 *   partial, so a page by phase or status with deleted orders had no index in list order.
 *   `deleted_at` is their last column, so that they serve the live lists by phase and/or status
 *   as well, without reading order rows; the three partial indexes for those go, so an order
 *   write updates three indexes by phase and status instead of four.
 *
 * - `order_deleted_properties` and `order_deleted_property_counts`: the flattened properties of
 *   soft-deleted orders and their number per path, phase and status, beside those of live orders
 *   (`order_properties`, `order_property_counts`), so that property filters with includeDeleted
 *   read indexes too. Backfilled from the deleted orders in batches in key order.
 *
 * The counts are filled by grouped passes over the orders, the indexes built by the database's own
 * sort, and the deleted orders' paths written 5,000 orders at a time; memory stays flat.
 */
export function deletedOrders(dialect: Dialect): Migration {
  const utcDay = (column: string) => (dialect === 'postgres' ? sql`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(${sql.ref(column)}, 1, 10)`);
  const day = utcDay('created_at');
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_deleted_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_deleted_counts_pk', ['business_id', 'day', 'phase', 'status', 'shard'])
        .execute();
      await sql`insert into order_deleted_counts (business_id, day, phase, status, shard, n)
        select business_id, ${day}, phase, status, 0, count(*) from orders where deleted_at is not null
        group by business_id, ${day}, phase, status`.execute(db);
      await db.schema.createTable('order_deleted_change_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_deleted_change_counts_pk', ['business_id', 'day', 'shard'])
        .execute();
      await sql`insert into order_deleted_change_counts (business_id, day, shard, n)
        select business_id, ${utcDay('updated_at')}, 0, count(*) from orders where deleted_at is not null
        group by business_id, ${utcDay('updated_at')}`.execute(db);

      await deletedOrderProperties(db);

      // deleted_at last: SQLite, without statistics, took these for live lists over the partial ones
      // (a tie), and then read every order's row to test deleted_at; with it, they cover live lists
      // too, and the partial ones by phase and/or status, which it no longer chose, go.
      for (const index of ['orders_business_phase_status_idx', 'orders_live_phase_status_idx', 'orders_live_phase_idx', 'orders_live_status_idx']) {
        await sql`drop index ${sql.raw(index)}`.execute(db);
      }
      await sql`create index orders_all_phase_status_idx on orders (business_id, phase, status, created_at desc, id desc, deleted_at)`.execute(db);
      await sql`create index orders_all_phase_idx on orders (business_id, phase, created_at desc, id desc, deleted_at)`.execute(db);
      await sql`create index orders_all_status_idx on orders (business_id, status, created_at desc, id desc, deleted_at)`.execute(db);
    },
  };
}

async function deletedOrderProperties(db: Kysely<any>) {
  await db.schema.createTable('order_deleted_properties')
    .addColumn('business_id', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('value', 'text')
    .addPrimaryKeyConstraint('order_deleted_properties_pk', ['order_id', 'path'])
    .execute();
  await db.schema.createIndex('order_deleted_properties_lookup_idx').on('order_deleted_properties')
    .columns(['business_id', 'path', 'value', 'order_id']).execute();
  await db.schema.createTable('order_deleted_property_counts')
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('shard', 'integer', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('order_deleted_property_counts_pk', ['business_id', 'path', 'phase', 'status', 'shard'])
    .execute();
  let after = '';
  for (;;) {
    const orders: Array<{ id: string; business_id: string; properties: unknown }> = await db.selectFrom('orders').select(['id', 'business_id', 'properties'])
      .where('id', '>', after).where('deleted_at', 'is not', null).where('properties', 'is not', null)
      .orderBy('id').limit(BATCH).execute();
    if (orders.length === 0) break;
    const rows = orders.flatMap((o) => propertyPaths(o.properties).map((p) => ({ business_id: o.business_id, order_id: o.id, ...p })));
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await db.insertInto('order_deleted_properties').values(rows.slice(i, i + ROWS_PER_INSERT)).execute();
    after = orders[orders.length - 1].id;
  }
  await sql`insert into order_deleted_property_counts (business_id, path, phase, status, shard, n)
    select p.business_id, p.path, o.phase, o.status, 0, count(*) from order_deleted_properties p join orders o on o.id = p.order_id
    group by p.business_id, p.path, o.phase, o.status`.execute(db);
}
