import { sql } from 'kysely';
import { greatest } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import { sendWrite } from '../db/pipeline.ts';
import type { Db } from '../db/types.ts';

/**
 * Takes the business's write lock (its `write_clocks` row, held until commit) and the write's time:
 * the later of the clock and 1 ms after the previous write's. So a write's `updatedAt` is later than
 * that of every write of the business committed before it, with any number of instances, and a
 * poller asking for "later than the latest I saw" misses nothing (decision 0002).
 */
export async function takeWriteTime(db: Db, businessId: string, clockMs: number): Promise<string> {
  const {
    rows: [row],
  } = await db.executeQuery(takeWriteTimeQuery(db, { businessId, clockMs }));
  return new Date(Number(row.last_ms)).toISOString();
}

const takeWriteTimeQuery = statement((db, v: { businessId: string; clockMs: number }) =>
  db
    .insertInto('write_clocks')
    .values({ business_id: v.businessId, last_ms: v.clockMs })
    .onConflict((oc) =>
      oc.column('business_id').doUpdateSet({
        last_ms: greatest(db, sql`write_clocks.last_ms + 1`, sql.ref('excluded.last_ms')),
      }),
    )
    .returning('last_ms'),
);

/** The time of a write that follows another under the same lock: the same rule, without the row. */
export function laterThan(previous: string, clockMs: number): string {
  return new Date(Math.max(Date.parse(previous) + 1, clockMs)).toISOString();
}

/** Stores the time of the last of several writes that took their times with `laterThan` (src/write/groups.ts). */
export async function keepWriteTime(db: Db, businessId: string, time: string): Promise<void> {
  await sendWrite(db, keepWriteTimeQuery(db, { businessId, lastMs: Date.parse(time) }));
}

const keepWriteTimeQuery = statement((db, v: { businessId: string; lastMs: number }) =>
  db.updateTable('write_clocks').set({ last_ms: v.lastMs }).where('business_id', '=', v.businessId),
);
