import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * `order_property_counts` gets the order's phase and status in its key: the number of live orders
 * with a path, per phase and status. A list by phase and/or status with `propertyExists` (the
 * "accepted orders not yet in the ERP" poll) reads its total from these counts and `order_counts`
 * instead of testing every order of that phase and status against the side table (79 ms at 1M
 * orders on SQLite for ACTIVE/ACCEPTED without `sage200Evo.salesOrderNo`). Rebuilt from the side
 * table, which holds live orders only, since SQLite cannot change a primary key in place.
 */
export function propertyCountsByStatus(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_property_counts_by_status')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('shard', 'integer', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_property_counts_status_pk', ['business_id', 'path', 'phase', 'status', 'shard'])
        .execute();
      await sql`insert into order_property_counts_by_status (business_id, path, phase, status, shard, n)
        select p.business_id, p.path, o.phase, o.status, 0, count(*) from order_properties p join orders o on o.id = p.order_id
        group by p.business_id, p.path, o.phase, o.status`.execute(db);
      await db.schema.dropTable('order_property_counts').execute();
      await db.schema.alterTable('order_property_counts_by_status').renameTo('order_property_counts').execute();
    },
  };
}
