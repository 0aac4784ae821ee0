import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { bumpCounts } from './counts.ts';

/** `order_created_counts`: live orders per UTC day of their createdAt, phase and status, which deep pages skip by. */

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
 * Live orders per created day, of a phase and/or status when given, newest day first (or oldest
 * first); with `fromDay`, only that day and the days after it.
 */
export async function createdDays(
  db: Db, businessId: string, direction: 'asc' | 'desc', filter: { phase?: string; status?: string; fromDay?: string } = {},
): Promise<Array<{ day: string; n: number }>> {
  let query = db.selectFrom('order_created_counts').select(['day', sql<number | string>`sum(n)`.as('n')]).where('business_id', '=', businessId);
  if (filter.phase) query = query.where('phase', '=', filter.phase);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.fromDay) query = query.where('day', '>=', filter.fromDay);
  const rows = await query.groupBy('day').orderBy('day', direction).execute();
  return rows.map((r) => ({ day: r.day, n: Number(r.n) }));
}
