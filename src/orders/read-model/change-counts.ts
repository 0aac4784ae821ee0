import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { toIso } from '../../lib/time.ts';
import { bumpCounts } from './counts.ts';
import { whereLive } from '../../db/live.ts';
import { notIndexed, utcDay } from '../../db/dialect.ts';

/**
 * `order_change_counts`: live orders per UTC day of their updatedAt, the totals of changed-since
 * lists; `order_deleted_change_counts`: the soft-deleted ones, which lists with includeDeleted add.
 */

/** The UTC day (`YYYY-MM-DD`) of an order's updatedAt: its row in `order_change_counts`. */
export const changeDay = (updatedAt: Date | string): string => toIso(updatedAt).slice(0, 10);

export interface ChangeCountChange {
  /** The UTC day of the order's updatedAt. */
  day: string;
  /** The UTC day of its createdAt, which never changes. */
  created_day: string;
  delta: number;
}

/**
 * Moves live orders between the days of `order_change_counts`, in the caller's transaction and as
 * `bumpOrderCounts` does: +1 on a new order's day, -1 on a soft-deleted order's, and -1/+1 when a
 * PATCH moves an order's updatedAt to another day (nothing when it stays on the same day).
 */
export const bumpChangeCounts = (db: Db, businessId: string, changes: ChangeCountChange[]) =>
  bumpCounts(db, 'order_change_counts', businessId, ['day', 'created_day'], changes);

/** The same for soft-deleted orders: +1 on the day of a soft delete (its updatedAt). */
export const bumpDeletedChangeCounts = (db: Db, businessId: string, changes: ChangeCountChange[]) =>
  bumpCounts(db, 'order_deleted_change_counts', businessId, ['day', 'created_day'], changes);

/**
 * The exact number of live orders (or with `includeDeleted` all) changed after `since`
 * (updatedAt > since, which is also modifiedSince): the maintained counts of the whole days after
 * it, plus a count of the orders changed later on its own day, which the (business_id, updated_at)
 * index answers. One statement, so one snapshot. Its cost is bounded by one day's changes and the
 * number of days, not by the size of the window.
 */
export async function countChangedSince(
  db: Db,
  businessId: string,
  since: string,
  includeDeleted = false,
): Promise<number> {
  const day = since.slice(0, 10);
  // Timestamps are stored to the millisecond, so this is "before the next day".
  const endOfDay = `${day}T23:59:59.999Z`;
  const deleted = includeDeleted
    ? sql`+ (select coalesce(sum(n), 0) from order_deleted_change_counts where business_id = ${businessId} and day > ${day})`
    : sql``;
  const {
    rows: [row],
  } = await sql<{ n: number | string }>`select
      (select coalesce(sum(n), 0) from order_change_counts where business_id = ${businessId} and day > ${day}) ${deleted}
      + (select count(*) from orders where business_id = ${businessId} and ${includeDeleted ? sql`true` : whereLive()}
        and updated_at > ${since} and updated_at <= ${endOfDay}) as n`.execute(db);
  return Number(row.n);
}

/**
 * The older part of a list changed after `since`: the orders created at or before it and changed
 * after it, per UTC day of their createdAt, oldest day first (live ones, or with `includeDeleted`
 * all). Whole days from the maintained counts (changed after since's day, created before it), and
 * by query the two parts of since's own day the counts cannot split: orders created before that day
 * and changed later on it, and orders created on it at or before `since`. Each of those reads part of
 * one day's rows. One statement, so one snapshot; days with no such orders are left out.
 */
export async function olderChangedDays(
  db: Db,
  businessId: string,
  since: string,
  includeDeleted = false,
): Promise<Array<{ day: string; n: number }>> {
  const day = since.slice(0, 10);
  const startOfDay = `${day}T00:00:00.000Z`;
  const endOfDay = `${day}T23:59:59.999Z`;
  const live = includeDeleted ? sql`true` : whereLive();
  const counted = (table: 'order_change_counts' | 'order_deleted_change_counts') =>
    sql`select created_day as day, n from ${sql.table(table)} where business_id = ${businessId} and day > ${day} and created_day < ${day}`;
  const deleted = includeDeleted ? sql`union all ${counted('order_deleted_change_counts')}` : sql``;
  const { rows } = await sql<{ day: string; n: number | string }>`select day, sum(n) as n from (
      ${counted('order_change_counts')} ${deleted}
      union all select ${utcDay(db, sql.ref('created_at'))} as day, 1 as n from orders where business_id = ${businessId} and ${live}
        and updated_at > ${since} and updated_at <= ${endOfDay} and created_at < ${startOfDay}
      union all select ${day} as day, 1 as n from orders where business_id = ${businessId} and ${live}
        and created_at >= ${startOfDay} and created_at <= ${since} and ${notIndexed(db, 'updated_at')} > ${since}
    ) older group by day order by day`.execute(db);
  return rows.map((r) => ({ day: r.day, n: Number(r.n) })).filter((r) => r.n > 0);
}
