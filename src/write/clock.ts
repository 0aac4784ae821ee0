import { sql } from 'kysely';
import { greatest } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import { sendWrite } from '../db/pipeline.ts';
import type { Db } from '../db/types.ts';

/** A write's time, and why its business takes no writes for now (null: it does). */
export interface WriteClock {
  time: string;
  closed: string | null;
}

/**
 * Takes the business's write lock (its `write_clocks` row, held until commit) and the write's time:
 * the later of the clock and 1 ms after the previous write's. So a write's `updatedAt` is later than
 * that of every write of the business committed before it, with any number of instances, and a
 * poller asking for "later than the latest I saw" misses nothing (decision 0002). The row also
 * says whether the business is closed to writes (`closeWrites`): read under the lock, so no write
 * that the closing write has waited for, or that waits for it, misses it.
 */
export async function takeWriteTime(db: Db, businessId: string, clockMs: number): Promise<WriteClock> {
  const {
    rows: [row],
  } = await db.executeQuery(takeWriteTimeQuery(db, { businessId, clockMs }));
  return { time: new Date(Number(row.last_ms)).toISOString(), closed: row.closed };
}

/**
 * Closes the business to writes, with the reason its 409 gives, or opens it again (null): a
 * sandbox while it is reset, and from its deletion on. In a write of the business, which holds its
 * clock row; the writes that close it (`WriteScope.whileClosed`) go on.
 */
export async function closeWrites(db: Db, businessId: string, reason: string | null): Promise<void> {
  await db.updateTable('write_clocks').set({ closed: reason }).where('business_id', '=', businessId).execute();
}

/**
 * A new business's clock, closed to writes until `closeWrites(…, null)` opens it (a sandbox until its
 * copy is done): taken in the write that makes the business, under another business's lock.
 */
export async function newClosedClock(db: Db, businessId: string, time: string, reason: string): Promise<void> {
  await db
    .insertInto('write_clocks')
    .values({ business_id: businessId, last_ms: Date.parse(time), closed: reason })
    .execute();
}

/** Why the business takes no writes for now, for what records a business's rows outside a write (an import received); null: it does. */
export async function writesClosed(db: Db, businessId: string): Promise<string | null> {
  const row = await db
    .selectFrom('write_clocks')
    .select('closed')
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  return row?.closed ?? null;
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
    .returning(['last_ms', 'closed']),
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
