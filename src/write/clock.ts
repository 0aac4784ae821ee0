import { sql } from 'kysely';
import { greatest } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import type { Db } from '../db/types.ts';

/**
 * Takes the business's write lock and the write's time: the first statement of every write
 * (src/write/runner.ts). The business's row of `write_clocks` stays locked until the write's
 * transaction ends, so the business's writes run one at a time, in the order they commit; the time
 * is the later of the clock and one millisecond after the previous write's. So a write's
 * `updatedAt` is later than that of every write of the business that committed before it, on any
 * backend and with any number of instances, and a poller that asks for "later than the latest I
 * saw" misses nothing. Under a burst of more than a thousand writes a second the times run ahead
 * of the clock by up to the burst's length, and catch up when it ends.
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
