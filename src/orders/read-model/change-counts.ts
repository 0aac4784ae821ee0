import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { toIso } from '../../lib/time.ts';
import { countBump } from './counts.ts';
import { whereLive } from '../../db/live.ts';
import { notIndexed, utcDay } from '../../db/dialect.ts';

/** Orders per UTC day of updatedAt and of createdAt: changed-since totals and the runs of older orders. */

export const changeDay = (updatedAt: Date | string): string => toIso(updatedAt).slice(0, 10);

export interface ChangeCountChange {
  day: string;
  /** The UTC day of its createdAt, which never changes. */
  created_day: string;
  delta: number;
}

export const changeCounts = (changes: ChangeCountChange[]) =>
  countBump('order_change_counts', ['day', 'created_day'], changes);

export const deletedChangeCounts = (changes: ChangeCountChange[]) =>
  countBump('order_deleted_change_counts', ['day', 'created_day'], changes);

/**
 * The counts of the whole days after `since`, plus its own day's later changes by index: bounded by
 * one day's rows, not by the window. One statement, so one snapshot.
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
 * The older part per created day, oldest first: whole days from the counts, and by query the two
 * parts of since's own day the counts cannot split (created before it and changed later on it;
 * created on it at or before `since`). One statement, so one snapshot.
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
