import { sql } from 'kysely';
import { countShard } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';

export interface CountChange {
  phase: string;
  status: string;
  delta: number;
}

/** Changes with the same key summed, those that cancel out dropped, in key order. */
export function netChanges<T extends { delta: number }>(changes: T[], keyOf: (change: T) => string): T[] {
  const net = new Map<string, T>();
  for (const c of changes) {
    const key = keyOf(c);
    net.set(key, { ...c, delta: (net.get(key)?.delta ?? 0) + c.delta });
  }
  return [...net.entries()].filter(([, c]) => c.delta !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
}

/**
 * Applies changes to the maintained live-order counts, in the caller's transaction, on one shard
 * of them. Each change is an atomic upsert (`n = n + excluded.n`), so concurrent writers never
 * lose an increment; rows are
 * touched in (phase, status) order so that two transactions moving orders in opposite directions
 * take the row locks in the same order and cannot deadlock on PostgreSQL.
 */
export async function bumpOrderCounts(db: Db, businessId: string, changes: CountChange[]): Promise<void> {
  const shard = countShard(db);
  for (const c of netChanges(changes, (c) => `${c.phase}\u0000${c.status}`)) {
    await db.insertInto('order_counts').values({ business_id: businessId, phase: c.phase, status: c.status, shard, n: c.delta })
      .onConflict((oc) => oc.columns(['business_id', 'phase', 'status', 'shard'])
        .doUpdateSet({ n: sql<number>`order_counts.n + excluded.n` }))
      .execute();
  }
}

/** The number of live orders of the business, optionally of one phase and/or status, from the maintained counts. */
export async function countLiveOrders(db: Db, businessId: string, phase?: string, status?: string): Promise<number> {
  let query = db.selectFrom('order_counts').select(sql<number | string | null>`sum(n)`.as('total')).where('business_id', '=', businessId);
  if (phase) query = query.where('phase', '=', phase);
  if (status) query = query.where('status', '=', status);
  const row = await query.executeTakeFirst();
  return Number(row?.total ?? 0);
}
