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
}

/**
 * Orders per created day, of a phase and/or status when given, newest day first (or oldest first);
 * with `fromDay`, only that day and the days after it. Live orders, and with `includeDeleted` the
 * soft-deleted ones too (the two tables' rows summed per day).
 */
export async function createdDays(
  db: Db, businessId: string, direction: 'asc' | 'desc', filter: CreatedDaysFilter = {},
): Promise<Array<{ day: string; n: number }>> {
  const rowsOf = (table: 'order_created_counts' | 'order_deleted_counts') => {
    let query = db.selectFrom(table).select(['day', 'n']).where('business_id', '=', businessId);
    if (filter.phase) query = query.where('phase', '=', filter.phase);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.fromDay) query = query.where('day', '>=', filter.fromDay);
    return query;
  };
  const counts = filter.includeDeleted ? rowsOf('order_created_counts').unionAll(rowsOf('order_deleted_counts')) : rowsOf('order_created_counts');
  const rows = await db.selectFrom(counts.as('c')).select(['day', sql<number | string>`sum(n)`.as('n')])
    .groupBy('day').orderBy('day', direction).execute();
  return rows.map((r) => ({ day: r.day, n: Number(r.n) }));
}
