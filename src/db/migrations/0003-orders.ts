import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

export function orders(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('orders')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('partnership_id', 'text', (c) => c.notNull().references('partnerships.id'))
        .addColumn('membership_id', 'text')
        .addColumn('integration_id', 'text')
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('internal_reference', 'text', (c) => c.notNull())
        .addColumn('external_reference', 'text')
        .addColumn('notes', 'text')
        .addColumn('delivery_address', 'text')
        .addColumn('expected_delivery_at', t.timestamp, (c) => c.notNull())
        .addColumn('delivered_at', t.timestamp)
        .addColumn('shipped_at', t.timestamp)
        .addColumn('shipped_by', t.timestamp)
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('total_amount', t.numeric, (c) => c.notNull())
        .addColumn('properties', t.json)
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('ingested_at', t.timestamp)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      // The list's page order, its updatedSince/modifiedSince range, and its phase/status filter.
      await db.schema.createIndex('orders_business_created_idx').on('orders')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      await db.schema.createIndex('orders_business_updated_idx').on('orders')
        .columns(['business_id', 'updated_at']).execute();
      await db.schema.createIndex('orders_business_phase_status_idx').on('orders')
        .columns(['business_id', 'phase', 'status', 'created_at desc']).execute();

      await db.schema.createTable('order_items')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id'))
        .addColumn('item_list_entry_id', 'text', (c) => c.notNull().references('item_list_entries.id'))
        .addColumn('line_number', 'integer', (c) => c.notNull())
        .addColumn('quantity', t.numeric, (c) => c.notNull())
        .addColumn('unit_of_measure', 'text', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('price', t.numeric, (c) => c.notNull())
        .addColumn('cost', t.numeric, (c) => c.notNull())
        .addColumn('properties', t.json)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        // Contract 2.2: at most one item per item list entry on an order.
        .addUniqueConstraint('order_items_order_entry_uq', ['order_id', 'item_list_entry_id'])
        .execute();
      await db.schema.createIndex('order_items_order_idx').on('order_items').columns(['order_id']).execute();

      // Per-business sequences (SO-000001, later INV-000001), incremented inside the writing transaction.
      await db.schema.createTable('business_counters')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('business_counters_pk', ['business_id', 'name'])
        .execute();
    },
  };
}
