import { sql } from 'kysely';
import { insertRows } from '../../db/bulk.ts';
import { utcDay } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import { statement } from '../../db/statement.ts';
import { changeDay } from './change-counts.ts';
import { bumpCounts } from './counts.ts';
import { propertyPaths } from './property-values.ts';

/**
 * The flattened property index: one `order_properties` row per path present in a live order's
 * properties (every prefix: `a` and `a.b` for {"a":{"b":1}}), and `order_property_counts` with
 * the number of live orders that have each path, per phase and status. Soft-deleted orders have
 * the same in `order_deleted_properties` and `order_deleted_property_counts` (an order's rows move
 * there at its soft delete), so that lists with includeDeleted read the same indexes. All are
 * written in the transaction of every write that sets an order's properties, phase or status, or
 * soft-deletes it, so a filter on properties reads an index instead of parsing JSON. Each row's
 * path and value are made by propertyPaths (property-values.ts).
 */

export interface PathCountChange {
  path: string;
  /** The UTC day of the order's createdAt, which never changes. */
  day: string;
  phase: string;
  status: string;
  delta: number;
}

/** The side table and the path counts of live orders, and of soft-deleted ones. */
export const SIDE_TABLES = {
  live: { rows: 'order_properties', counts: 'order_property_counts' },
  deleted: { rows: 'order_deleted_properties', counts: 'order_deleted_property_counts' },
} as const;
export type Side = keyof typeof SIDE_TABLES;
type Rows = (typeof SIDE_TABLES)[Side]['rows'];

/** Adds to the per-path counts (per created day, phase and status), as src/orders/read-model/counts.ts bumpCounts does. */
const bumpPathCounts = (db: Db, side: Side, businessId: string, changes: PathCountChange[]) =>
  bumpCounts(db, SIDE_TABLES[side].counts, businessId, ['path', 'day', 'phase', 'status'], changes);

type Counted = { phase: string; status: string; properties: unknown; created_at: Date | string };

/** The count changes of an order's paths: -1 at its phase and status before, +1 after, on its created day. */
export function pathCountChanges(before: Counted | null, after: Counted | null): PathCountChange[] {
  const changes: PathCountChange[] = [];
  for (const [order, delta] of [
    [before, -1],
    [after, 1],
  ] as const) {
    if (!order) continue;
    const day = changeDay(order.created_at);
    for (const p of propertyPaths(order.properties))
      changes.push({ path: p.path, day, phase: order.phase, status: order.status, delta });
  }
  return changes;
}

const ROWS_PER_INSERT = 500;

const pathRowsInsert = statement(
  (
    db,
    v: { rows: Array<{ business_id: string; order_id: string; path: string; value: string | null }> },
    table?: Rows,
  ) => db.insertInto(table!).values(v.rows),
);

async function insertPathRows(
  db: Db,
  table: Rows,
  rows: Array<{ business_id: string; order_id: string; path: string; value: string | null }>,
) {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    await db.executeQuery(pathRowsInsert(db, { rows: rows.slice(i, i + ROWS_PER_INSERT) }, table));
  }
}

/**
 * Re-indexes an order whose properties changed (the order row is locked by the caller): only
 * the paths that went, came or changed value are written, so a PATCH that sets one key rewrites
 * one row, not the order's whole index.
 */
async function reindexOrderProperties(
  db: Db,
  table: Rows,
  businessId: string,
  orderId: string,
  before: unknown,
  after: unknown,
): Promise<void> {
  const old = new Map(propertyPaths(before).map((p) => [p.path, p.value]));
  const next = propertyPaths(after);
  const gone = new Set(old.keys());
  const added: typeof next = [];
  for (const p of next) {
    gone.delete(p.path);
    if (!old.has(p.path)) added.push(p);
    else if (old.get(p.path) !== p.value) {
      await db.executeQuery(pathValueUpdate(db, { orderId, path: p.path, value: p.value }, table));
    }
  }
  if (gone.size > 0)
    await db
      .deleteFrom(table)
      .where('order_id', '=', orderId)
      .where('path', 'in', [...gone])
      .execute();
  await insertPathRows(
    db,
    table,
    added.map((p) => ({ business_id: businessId, order_id: orderId, ...p })),
  );
}

/** A changed value at one path of an order. */
const pathValueUpdate = statement((db, v: { orderId: string; path: string; value: string | null }, table?: Rows) =>
  db.updateTable(table!).set({ value: v.value }).where('order_id', '=', v.orderId).where('path', '=', v.path),
);

/** Stored JSON as the driver returns it: text on SQLite, parsed (with normalised key order) on PostgreSQL. */
const sameJson = (a: unknown, b: unknown) =>
  a === b || (typeof a !== 'string' && JSON.stringify(a) === JSON.stringify(b));

type Indexed = Counted & { id: string };

/**
 * Brings one side's table and path counts from `before` to `after` (null: the order is not on
 * this side), in the caller's transaction: an order comes (create, or the deleted side at a soft
 * delete), goes, or changes its properties, phase or status. Changes that touch neither write nothing.
 */
export async function applyPropertyChange(
  db: Db,
  side: Side,
  businessId: string,
  before: Indexed | null,
  after: Indexed | null,
): Promise<void> {
  if (!before && !after) return;
  const table = SIDE_TABLES[side].rows;
  const sameProperties = before !== null && after !== null && sameJson(before.properties, after.properties);
  if (before && after) {
    if (!sameProperties)
      await reindexOrderProperties(db, table, businessId, after.id, before.properties, after.properties);
  } else if (after) {
    const paths = propertyPaths(after.properties);
    await insertPathRows(
      db,
      table,
      paths.map((p) => ({ business_id: businessId, order_id: after.id, ...p })),
    );
  } else if (before) {
    await db.deleteFrom(table).where('order_id', '=', before.id).execute();
  }
  if (sameProperties && before!.phase === after!.phase && before!.status === after!.status) return;
  await bumpPathCounts(db, side, businessId, pathCountChanges(before, after));
}

const BATCH = 5_000;

/**
 * Fills one side's table and path counts for a business from its orders (live ones, or
 * soft-deleted ones), after the caller emptied them: in batches in key order, so that memory stays
 * flat. `onProgress` is called with the number of orders indexed so far on this side.
 */
export async function rebuildSideTable(
  db: Db,
  side: Side,
  businessId: string,
  onProgress?: (indexed: number) => void,
): Promise<void> {
  const { rows: table, counts } = SIDE_TABLES[side];
  let after = '';
  let indexed = 0;
  for (;;) {
    const orders = await db
      .selectFrom('orders')
      .select(['id', 'properties'])
      .where('business_id', '=', businessId)
      .where('id', '>', after)
      .where('deleted_at', side === 'live' ? 'is' : 'is not', null)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (orders.length === 0) break;
    const rows: unknown[][] = [];
    for (const o of orders)
      if (o.properties !== null) for (const p of propertyPaths(o.properties)) rows.push([o.id, p.path, p.value]);
    await insertRows(db, table, ['order_id', 'path', 'value'], rows, { business_id: businessId });
    after = orders[orders.length - 1].id;
    indexed += orders.length;
    onProgress?.(indexed);
  }
  const day = utcDay(db, sql.ref('o.created_at'));
  await sql`insert into ${sql.table(counts)} (business_id, path, day, phase, status, shard, n)
    select p.business_id, p.path, ${day}, o.phase, o.status, 0, count(*) from ${sql.table(table)} p join orders o on o.id = p.order_id
    where p.business_id = ${businessId} group by p.business_id, p.path, ${day}, o.phase, o.status`.execute(db);
}
