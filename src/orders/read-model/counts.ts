import { sql } from 'kysely';
import { countShard } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import { statement } from '../../db/statement.ts';
import { sendWrite } from '../../db/pipeline.ts';

export interface CountChange {
  phase: string;
  status: string;
  delta: number;
}

/** In key order: see bumpCounts. */
export function netChanges<T extends { delta: number }>(changes: T[], keyOf: (change: T) => string): T[] {
  const net = new Map<string, T>();
  for (const c of changes) {
    const key = keyOf(c);
    net.set(key, { ...c, delta: (net.get(key)?.delta ?? 0) + c.delta });
  }
  return [...net.entries()]
    .filter(([, c]) => c.delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, c]) => c);
}

type CountTable =
  | 'order_counts'
  | 'order_change_counts'
  | 'order_created_counts'
  | 'order_deleted_counts'
  | 'order_property_counts'
  | 'order_deleted_property_counts'
  | 'order_deleted_change_counts'
  | 'shipment_counts'
  | 'shipment_change_counts';

/**
 * One atomic multi-row upsert (`n = n + excluded.n`), so concurrent writers never lose an increment,
 * its rows netted per key and in key order, so that two transactions take the row locks in the same
 * order and cannot deadlock on PostgreSQL. `keys`: the key columns besides business_id and shard.
 */
export async function bumpCounts<C extends { delta: number }>(
  db: Db,
  table: CountTable,
  businessId: string,
  keys: ReadonlyArray<keyof C & string>,
  changes: C[],
): Promise<void> {
  const shard = countShard(db);
  const rows = netChanges(changes, (c) => keys.map((k) => String(c[k])).join('\u0000')).map((c) => ({
    business_id: businessId,
    ...Object.fromEntries(keys.map((k) => [k, c[k]])),
    shard,
    n: c.delta,
  }));
  for (let i = 0; i < rows.length; i += ROWS_PER_UPSERT)
    await sendWrite(db, countUpsert(db, { rows: rows.slice(i, i + ROWS_PER_UPSERT) }, table));
}

/** Under both backends' bound-parameter limits, with the widest key (7 columns). */
const ROWS_PER_UPSERT = 1_000;

/** Its text depends on the table and the number of rows. */
const countUpsert = statement((db, v: { rows: Array<Record<string, unknown>> }, table?: CountTable) => {
  const keys = Object.keys(v.rows[0]).filter((k) => k !== 'business_id' && k !== 'shard' && k !== 'n');
  // The table is one of nine of the same shape; the builder cannot type a column list chosen at run time.
  return db
    .insertInto(table!)
    .values(v.rows as never)
    .onConflict((oc) =>
      oc
        .columns(['business_id', ...keys, 'shard'] as never)
        .doUpdateSet({ n: sql<number>`${sql.ref(`${table}.n`)} + excluded.n` } as never),
    );
});

export const bumpOrderCounts = (db: Db, businessId: string, changes: CountChange[]) =>
  bumpCounts(db, 'order_counts', businessId, ['phase', 'status'], changes);

export function sumOfCounts(
  db: Db,
  table: 'order_counts' | 'order_deleted_counts',
  businessId: string,
  { phase, status }: { phase?: string; status?: string },
) {
  let query = db
    .selectFrom(table)
    .select(sql<number | string>`coalesce(sum(n), 0)`.as('n'))
    .where('business_id', '=', businessId);
  if (phase) query = query.where('phase', '=', phase);
  if (status) query = query.where('status', '=', status);
  return query;
}

/** One statement, so one snapshot. */
export async function countOrders(
  db: Db,
  businessId: string,
  of: { phase?: string; status?: string; includeDeleted?: boolean },
): Promise<number> {
  const live = sumOfCounts(db, 'order_counts', businessId, of);
  const row = of.includeDeleted
    ? await db
        .selectNoFrom((eb) => eb(live, '+', sumOfCounts(db, 'order_deleted_counts', businessId, of)).as('n'))
        .executeTakeFirstOrThrow()
    : await live.executeTakeFirstOrThrow();
  return Number(row.n);
}
