import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { toIso } from '../../lib/time.ts';
import { bumpCounts } from './counts.ts';
import { whereLive } from '../../db/live.ts';

/**
 * `order_change_counts`: live orders per UTC day of their updatedAt, the totals of changed-since
 * lists; `order_deleted_change_counts`: the soft-deleted ones, which lists with includeDeleted add.
 */

/** The UTC day (`YYYY-MM-DD`) of an order's updatedAt: its row in `order_change_counts`. */
export const changeDay = (updatedAt: Date | string): string => toIso(updatedAt).slice(0, 10);

/**
 * Moves live orders between the days of `order_change_counts`, in the caller's transaction and as
 * `bumpOrderCounts` does: +1 on a new order's day, -1 on a soft-deleted order's, and -1/+1 when a
 * PATCH moves an order's updatedAt to another day (nothing when it stays on the same day).
 */
export const bumpChangeCounts = (db: Db, businessId: string, changes: Array<{ day: string; delta: number }>) =>
  bumpCounts(db, 'order_change_counts', businessId, ['day'], changes);

/** The same for soft-deleted orders: +1 on the day of a soft delete (its updatedAt). */
export const bumpDeletedChangeCounts = (db: Db, businessId: string, changes: Array<{ day: string; delta: number }>) =>
  bumpCounts(db, 'order_deleted_change_counts', businessId, ['day'], changes);

/**
 * The exact number of live orders (or with `includeDeleted` all) changed after `since` (updatedAt > since, which is also
 * modifiedSince): the maintained counts of the whole days after it, plus a count of the orders
 * changed later on its own day, which the (business_id, updated_at) index answers. One statement,
 * so one snapshot. Its cost is bounded by one day's changes and the number of days, not by the
 * size of the window (a 7-day window at 1M orders is 16.6k orders).
 */
export async function countChangedSince(db: Db, businessId: string, since: string, includeDeleted = false): Promise<number> {
  const day = since.slice(0, 10);
  // Timestamps are stored to the millisecond, so this is "before the next day".
  const endOfDay = `${day}T23:59:59.999Z`;
  const deleted = includeDeleted
    ? sql`+ (select coalesce(sum(n), 0) from order_deleted_change_counts where business_id = ${businessId} and day > ${day})` : sql``;
  const { rows: [row] } = await sql<{ n: number | string }>`select
      (select coalesce(sum(n), 0) from order_change_counts where business_id = ${businessId} and day > ${day}) ${deleted}
      + (select count(*) from orders where business_id = ${businessId} and ${includeDeleted ? sql`true` : whereLive()}
        and updated_at > ${since} and updated_at <= ${endOfDay}) as n`.execute(db);
  return Number(row.n);
}
