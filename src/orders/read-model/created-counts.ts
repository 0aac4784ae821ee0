import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { bumpCounts } from './counts.ts';

/**
 * `order_created_counts`: live orders per UTC day of their createdAt, phase and status, which deep
 * pages skip by; `order_deleted_counts`: the soft-deleted ones, which lists with includeDeleted add.
 */

export interface CreatedCountChange {
  day: string;
  phase: string;
  status: string;
  delta: number;
}

/**
 * Moves live orders between the rows of `order_created_counts`, in the caller's transaction and as
 * `bumpOrderCounts` does: +1 for a new order, -1 for a soft-deleted one, -1/+1 when a PATCH changes
 * its phase or status (its day never changes).
 */
export const bumpCreatedCounts = (db: Db, businessId: string, changes: CreatedCountChange[]) =>
  bumpCounts(db, 'order_created_counts', businessId, ['day', 'phase', 'status'], changes);

/**
 * Moves soft-deleted orders between the rows of `order_deleted_counts`: +1 when an order is
 * deleted (at its phase and status as deleted, DELETED when through the API), and the same -1/+1
 * as live orders if a deleted order's phase or status were ever changed. A live order PATCHed to
 * phase DELETED is live, and counted in `order_created_counts`.
 */
export const bumpDeletedCounts = (db: Db, businessId: string, changes: CreatedCountChange[]) =>
  bumpCounts(db, 'order_deleted_counts', businessId, ['day', 'phase', 'status'], changes);

export interface CreatedDaysFilter {
  phase?: string;
  status?: string;
  fromDay?: string;
  includeDeleted?: boolean;
  /** Only the orders that have this property path, or with `exists: false` those that do not. */
  path?: { path: string; exists: boolean };
}

type DayCounts =
  | 'order_created_counts'
  | 'order_deleted_counts'
  | 'order_property_counts'
  | 'order_deleted_property_counts';

/**
 * Orders per created day, of a phase and/or status when given, newest day first (or oldest first);
 * with `fromDay`, only that day and the days after it. Live orders, and with `includeDeleted` the
 * soft-deleted ones too (the two tables' rows summed per day). With `path`, the orders that have
 * it (the path counts, src/orders/read-model/properties.ts), or that lack it (the orders less
 * those with it, per day). One statement, so one snapshot; days with no such orders are left out.
 */
export async function createdDays(
  db: Db,
  businessId: string,
  direction: 'asc' | 'desc',
  filter: CreatedDaysFilter = {},
): Promise<Array<{ day: string; n: number }>> {
  const rowsOf = (table: DayCounts, sign: 1 | -1) => {
    // The four tables share (business_id, day, phase, status, n); the path tables add `path`.
    let query = db
      .selectFrom(table as 'order_created_counts')
      .select(['day', sign === 1 ? sql<number>`n`.as('n') : sql<number>`-n`.as('n')])
      .where('business_id', '=', businessId);
    if (table === 'order_property_counts' || table === 'order_deleted_property_counts')
      query = query.where(sql.ref('path'), '=', filter.path!.path);
    if (filter.phase) query = query.where('phase', '=', filter.phase);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.fromDay) query = query.where('day', '>=', filter.fromDay);
    return query;
  };
  const tables: Array<[DayCounts, 1 | -1]> = [];
  const withDeleted = (live: DayCounts, deleted: DayCounts, sign: 1 | -1) => {
    tables.push([live, sign]);
    if (filter.includeDeleted) tables.push([deleted, sign]);
  };
  if (!filter.path?.exists) withDeleted('order_created_counts', 'order_deleted_counts', 1);
  if (filter.path) withDeleted('order_property_counts', 'order_deleted_property_counts', filter.path.exists ? 1 : -1);
  const [first, ...rest] = tables.map(([table, sign]) => rowsOf(table, sign));
  const counts = rest.reduce((all, next) => all.unionAll(next), first);
  const rows = await db
    .selectFrom(counts.as('c'))
    .select(['day', sql<number | string>`sum(n)`.as('n')])
    .groupBy('day')
    .orderBy('day', direction)
    .execute();
  return rows.map((r) => ({ day: r.day, n: Number(r.n) })).filter((r) => r.n > 0);
}
