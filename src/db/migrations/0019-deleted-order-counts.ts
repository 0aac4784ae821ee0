import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Lists with `includeDeleted=true` at the cost of the live ones.
 *
 * - `order_deleted_counts(business_id, day, phase, status, shard, n)`: the number of soft-deleted
 *   orders per UTC day of `createdAt`, phase and status, beside `order_created_counts` (live
 *   orders). Their sum is every order, so such a list's total and its deep pages' day skipping read
 *   counts instead of `count(*)` over all orders (400–1,000 ms at 1M on SQLite). Only a soft delete
 *   writes it; the live tables and their writes are unchanged.
 * - Indexes over all orders in list order by phase, by status, and by both (this one replaces
 *   `orders_business_phase_status_idx`, which lacked the `id` tie-break): the live ones are
 *   partial, so a page by phase or status with deleted orders had no index in list order.
 *   `deleted_at` is their last column, so that they serve the live lists by phase and/or status
 *   as well, without reading order rows; the three partial indexes for those go, so an order
 *   write updates three indexes by phase and status instead of four.
 *
 * The counts are filled by one grouped pass over the orders, and the indexes built by the database's
 * own sort; neither holds the orders in this process's memory.
 */
export function deletedOrderCounts(dialect: Dialect): Migration {
  const day = dialect === 'postgres' ? sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(created_at, 1, 10)`;
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_deleted_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_deleted_counts_pk', ['business_id', 'day', 'phase', 'status', 'shard'])
        .execute();
      await sql`insert into order_deleted_counts (business_id, day, phase, status, shard, n)
        select business_id, ${day}, phase, status, 0, count(*) from orders where deleted_at is not null
        group by business_id, ${day}, phase, status`.execute(db);

      // deleted_at last: SQLite, without statistics, took these for live lists over the partial ones
      // (a tie), and then read every order's row to test deleted_at; with it, they cover live lists
      // too, and the partial ones by phase and/or status, which it no longer chose, go.
      for (const index of ['orders_business_phase_status_idx', 'orders_live_phase_status_idx', 'orders_live_phase_idx', 'orders_live_status_idx']) {
        await sql`drop index ${sql.raw(index)}`.execute(db);
      }
      await sql`create index orders_all_phase_status_idx on orders (business_id, phase, status, created_at desc, id desc, deleted_at)`.execute(db);
      await sql`create index orders_all_phase_idx on orders (business_id, phase, created_at desc, id desc, deleted_at)`.execute(db);
      await sql`create index orders_all_status_idx on orders (business_id, status, created_at desc, id desc, deleted_at)`.execute(db);
    },
  };
}
