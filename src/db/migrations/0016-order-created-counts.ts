import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `order_created_counts(business_id, day, phase, status, shard, n)`: the number of live orders
 * created on each UTC day, per phase and status, maintained in the transaction of every write that
 * creates an order, changes its phase or status, or soft-deletes it. A deep page of the list
 * (unfiltered, or by phase and/or status) skips whole days by these counts and walks only the rows
 * of the day it starts in (src/orders/list-repository.ts), instead of every row before it.
 */
export function orderCreatedCounts(dialect: Dialect): Migration {
  const day = dialect === 'postgres' ? sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(created_at, 1, 10)`;
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_created_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_created_counts_pk', ['business_id', 'day', 'phase', 'status', 'shard'])
        .execute();
      await sql`insert into order_created_counts (business_id, day, phase, status, shard, n)
        select business_id, ${day}, phase, status, 0, count(*) from orders where deleted_at is null
        group by business_id, ${day}, phase, status`.execute(db);
    },
  };
}
