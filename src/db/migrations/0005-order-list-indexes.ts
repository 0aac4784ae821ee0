import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Order lists at a million rows. The list always filters `deleted_at is null` unless
 * includeDeleted is set, so partial indexes over live orders let the page and the count be read
 * from the index alone (no table row per order). `order_counts` keeps the number of live orders
 * per business, phase and status, maintained in the transaction of every write that creates an
 * order, changes its phase or status, or soft-deletes it; the list reads its `total` from there
 * when the only filters are phase and status.
 */
export function orderListIndexes(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`create index orders_live_created_idx on orders (business_id, created_at desc, id desc)
        where deleted_at is null`.execute(db);
      await sql`create index orders_live_phase_status_idx on orders (business_id, phase, status, created_at desc, id desc)
        where deleted_at is null`.execute(db);
      // updatedSince/modifiedSince: the range plus everything the page's sort and the live check
      // need, so both the count and the page's ids come from the index (a partial index here loses
      // to the old (business_id, updated_at) one in SQLite's planner, which then reads every row).
      await sql`drop index orders_business_updated_idx`.execute(db);
      await sql`create index orders_business_updated_idx on orders (business_id, updated_at, created_at, id, deleted_at)`.execute(db);

      await db.schema.createTable('order_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_counts_pk', ['business_id', 'phase', 'status'])
        .execute();
      await sql`insert into order_counts (business_id, phase, status, n)
        select business_id, phase, status, count(*) from orders where deleted_at is null
        group by business_id, phase, status`.execute(db);
    },
  };
}
