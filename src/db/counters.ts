import { sql } from 'kysely';
import { sendRead } from './pipeline.ts';
import { statement } from './statement.ts';
import type { Db } from './types.ts';

/**
 * The next per-business counter value, or with `count` the last of the next `count` values (the
 * first is `count - 1` below it); the upsert's row lock queues concurrent creators, so none share a number.
 */
export async function nextCounterValue(db: Db, businessId: string, name: string, count = 1): Promise<number> {
  const {
    rows: [row],
  } = await db.executeQuery(nextCounterQuery(db, { businessId, name, count }));
  return Number(row.value);
}

/**
 * `nextCounterValue`, sent ahead (src/db/pipeline.ts sendRead): the statements that follow travel
 * with it, and `value` answers later. For a write that is undone whole if it fails, so that a
 * number taken early is never lost.
 */
export async function sendNextCounterValue(
  db: Db,
  businessId: string,
  name: string,
  count = 1,
): Promise<{ value: Promise<number> }> {
  const { answer } = await sendRead<{ value: number }>(db, nextCounterQuery(db, { businessId, name, count }));
  return { value: answer.then(({ rows: [row] }) => Number(row.value)) };
}

const nextCounterQuery = statement((db, v: { businessId: string; name: string; count: number }) =>
  db
    .insertInto('business_counters')
    .values({ business_id: v.businessId, name: v.name, value: v.count })
    .onConflict((oc) =>
      oc.columns(['business_id', 'name']).doUpdateSet({ value: sql<number>`business_counters.value + excluded.value` }),
    )
    .returning('value'),
);

/**
 * Raises a per-business counter to `value` unless it is past it already, so that the values given
 * next come after it (an order's SO number that a caller sent in the numbers' own form).
 */
export async function raiseCounterTo(db: Db, businessId: string, name: string, value: number): Promise<void> {
  await db.executeQuery(raiseCounterQuery(db, { businessId, name, value }));
}

const raiseCounterQuery = statement((db, v: { businessId: string; name: string; value: number }) =>
  db
    .insertInto('business_counters')
    .values({ business_id: v.businessId, name: v.name, value: v.value })
    .onConflict((oc) =>
      oc.columns(['business_id', 'name']).doUpdateSet({
        value: sql<number>`case when business_counters.value < excluded.value then excluded.value else business_counters.value end`,
      }),
    ),
);
