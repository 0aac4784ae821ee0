import type { Kysely, Migration } from 'kysely';
import { insertRows } from '../../demo/bulk.ts';
import { propertyPaths } from '../../orders/properties-index.ts';
import type { Database, Db, Dialect } from '../types.ts';

const BATCH = 5_000;

/**
 * The flattened property index of live orders (src/orders/properties-index.ts): one row per
 * path present in an order's properties, and the number of live orders per path. Backfilled here
 * from the existing live orders, in batches in key order, with the same code the writes use.
 */
export function orderProperties(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('order_properties')
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('value', 'text')
        .addPrimaryKeyConstraint('order_properties_pk', ['order_id', 'path'])
        .execute();
      // A value's orders and a path's orders, both answered from the index alone.
      await db.schema.createIndex('order_properties_lookup_idx').on('order_properties')
        .columns(['business_id', 'path', 'value', 'order_id']).execute();
      await db.schema.createTable('order_property_counts')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('order_property_counts_pk', ['business_id', 'path'])
        .execute();

      const typed = db as unknown as Db & Kysely<Database>;
      let after = '';
      for (;;) {
        const orders = await typed.selectFrom('orders').select(['id', 'business_id', 'properties'])
          .where('id', '>', after).where('deleted_at', 'is', null).where('properties', 'is not', null)
          .orderBy('id').limit(BATCH).execute();
        if (orders.length === 0) break;
        const rows: unknown[][] = [];
        for (const o of orders) for (const p of propertyPaths(o.properties)) rows.push([o.business_id, o.id, p.path, p.value]);
        await insertRows(typed, 'order_properties', ['business_id', 'order_id', 'path', 'value'], rows);
        after = orders[orders.length - 1].id;
      }
      await db.insertInto('order_property_counts').columns(['business_id', 'path', 'n'])
        .expression((eb: any) => eb.selectFrom('order_properties').select(['business_id', 'path', eb.fn.countAll().as('n')]).groupBy(['business_id', 'path']))
        .execute();
    },
  };
}
