import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `order_change_counts` and `order_deleted_change_counts` get the UTC day of the order's createdAt
 * beside the day of its updatedAt: the number of orders changed on a day, per the day they were
 * created. A changed-since list is split at its time u (src/orders/list-repository.ts): the
 * orders created after u, then the older ones changed after u. These counts say on which days
 * those older orders were created and how many, so the older part is counted and paged by day
 * instead of read from a range of the updated_at index as wide as the window (a year at 1M
 * orders: 507k entries for 7k older orders, 195 ms for the last page). An order's created day
 * never changes, so a write touches as many count rows as before. Rebuilt from the orders, since
 * SQLite cannot change a primary key in place.
 */
export function changeCountsByCreatedDay(dialect: Dialect): Migration {
  const dayOf = (column: string) => (dialect === 'postgres'
    ? sql`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD')` : sql`substr(${sql.ref(column)}, 1, 10)`);
  const rekey = async (db: Kysely<any>, counts: string, deleted: boolean) => {
    const next = `${counts}_by_created`;
    await db.schema.createTable(next)
      .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('created_day', 'text', (c) => c.notNull())
      .addColumn('shard', 'integer', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${next}_pk`, ['business_id', 'day', 'created_day', 'shard'])
      .execute();
    await sql`insert into ${sql.table(next)} (business_id, day, created_day, shard, n)
      select business_id, ${dayOf('updated_at')}, ${dayOf('created_at')}, 0, count(*) from orders
      where deleted_at ${deleted ? sql`is not null` : sql`is null`}
      group by business_id, ${dayOf('updated_at')}, ${dayOf('created_at')}`.execute(db);
    await db.schema.dropTable(counts).execute();
    await db.schema.alterTable(next).renameTo(counts).execute();
  };
  return {
    async up(db: Kysely<any>) {
      await rekey(db, 'order_change_counts', false);
      await rekey(db, 'order_deleted_change_counts', true);
    },
  };
}
