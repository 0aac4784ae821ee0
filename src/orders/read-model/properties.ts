import { sql } from 'kysely';
import { insertRows } from '../../db/bulk.ts';
import { utcDay } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import { statement } from '../../db/statement.ts';
import { sendWrite } from '../../db/pipeline.ts';
import { changeDay } from './change-counts.ts';
import { type CountBump, countBump } from './counts.ts';
import { propertyPaths } from './property-values.ts';

/**
 * The side tables and path counts: one row per path present in an order's properties, every prefix
 * included (`a` and `a.b` for {"a":{"b":1}}). A soft delete moves an order's rows to the deleted side.
 */

export interface PathCountChange {
  path: string;
  /** Of the order's createdAt, which never changes. */
  day: string;
  phase: string;
  status: string;
  delta: number;
}

export const SIDE_TABLES = {
  live: { rows: 'order_properties', counts: 'order_property_counts' },
  deleted: { rows: 'order_deleted_properties', counts: 'order_deleted_property_counts' },
} as const;
export type Side = keyof typeof SIDE_TABLES;
type Rows = (typeof SIDE_TABLES)[Side]['rows'];

const pathCounts = (side: Side, changes: PathCountChange[]) =>
  countBump(SIDE_TABLES[side].counts, ['path', 'day', 'phase', 'status'], changes);

type Counted = { phase: string; status: string; properties: unknown; created_at: Date | string };

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
    await sendWrite(db, pathRowsInsert(db, { rows: rows.slice(i, i + ROWS_PER_INSERT) }, table));
  }
}

/** The caller holds the order's row lock. Only the paths that went, came or changed value are written. */
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
      await sendWrite(db, pathValueUpdate(db, { orderId, path: p.path, value: p.value }, table));
    }
  }
  if (gone.size > 0)
    await sendWrite(
      db,
      db
        .deleteFrom(table)
        .where('order_id', '=', orderId)
        .where('path', 'in', [...gone]),
    );
  await insertPathRows(
    db,
    table,
    added.map((p) => ({ business_id: businessId, order_id: orderId, ...p })),
  );
}

const pathValueUpdate = statement((db, v: { orderId: string; path: string; value: string | null }, table?: Rows) =>
  db.updateTable(table!).set({ value: v.value }).where('order_id', '=', v.orderId).where('path', '=', v.path),
);

/** Stored JSON as the driver returns it: text on SQLite, parsed (with normalised key order) on PostgreSQL. */
const sameJson = (a: unknown, b: unknown) =>
  a === b || (typeof a !== 'string' && JSON.stringify(a) === JSON.stringify(b));

type Indexed = Counted & { id: string };

/**
 * Orders' changes on one side; `before` or `after` null: the order is not on this side. New orders'
 * rows are one insert for all of them. In the caller's transaction; the path counts to bump are
 * returned, for the caller to bump with the order counts in one statement.
 */
export async function applyPropertyChanges(
  db: Db,
  side: Side,
  businessId: string,
  changes: Array<{ before: Indexed | null; after: Indexed | null }>,
): Promise<CountBump> {
  const table = SIDE_TABLES[side].rows;
  const added: Array<{ business_id: string; order_id: string; path: string; value: string | null }> = [];
  const counts: PathCountChange[] = [];
  for (const { before, after } of changes) {
    if (!before && !after) continue;
    const sameProperties = before !== null && after !== null && sameJson(before.properties, after.properties);
    if (before && after) {
      if (!sameProperties)
        await reindexOrderProperties(db, table, businessId, after.id, before.properties, after.properties);
    } else if (after) {
      for (const p of propertyPaths(after.properties))
        added.push({ business_id: businessId, order_id: after.id, ...p });
    } else if (before) {
      await sendWrite(db, db.deleteFrom(table).where('order_id', '=', before.id));
    }
    if (sameProperties && before!.phase === after!.phase && before!.status === after!.status) continue;
    counts.push(...pathCountChanges(before, after));
  }
  await insertPathRows(db, table, added);
  return pathCounts(side, counts);
}

const BATCH = 5_000;

/** After the caller emptied them; in batches in key order, so that memory stays flat. */
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
