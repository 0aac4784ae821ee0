import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `order_change_counts(business_id, day, shard, n)`: the number of live orders whose `updated_at`
 * falls on each UTC day, maintained in the transaction of every write that creates an order,
 * changes it (a PATCH moves it to the day of its new `updated_at`) or soft-deletes it. A
 * modifiedSince/updatedSince total is then the sum of the whole days after the given time plus a
 * count of at most one day's changes, however long the window (src/orders/counts.ts).
 */
export function orderChangeCounts(dialect: Dialect): Migration {
  const day = dialect === 'postgres' ? sql`to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(updated_at, 1, 10)`;
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_change_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_change_counts_pk', ['business_id', 'day', 'shard'])
        .execute();
      await sql`insert into order_change_counts (business_id, day, shard, n)
        select business_id, ${day}, 0, count(*) from orders where deleted_at is null group by business_id, ${day}`.execute(db);
    },
  };
}
