import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { countBump } from './counts.ts';

/** Orders per UTC day of createdAt, phase and status, which deep pages skip by. */

export interface CreatedCountChange {
  day: string;
  phase: string;
  status: string;
  delta: number;
}

export const createdCounts = (changes: CreatedCountChange[]) =>
  countBump('order_created_counts', ['day', 'phase', 'status'], changes);

/** A live order PATCHed to phase DELETED is live, and counted in `order_created_counts`. */
export const deletedCounts = (changes: CreatedCountChange[]) =>
  countBump('order_deleted_counts', ['day', 'phase', 'status'], changes);

export interface CreatedDaysFilter {
  phase?: string;
  status?: string;
  fromDay?: string;
  includeDeleted?: boolean;
  path?: { path: string; exists: boolean };
}

type DayCounts =
  | 'order_created_counts'
  | 'order_deleted_counts'
  | 'order_property_counts'
  | 'order_deleted_property_counts';

/** A path's absence is the orders less those with it, per day. One statement, so one snapshot. */
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
