import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

export function invoices(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('invoices')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('partnership_id', 'text', (c) => c.notNull().references('partnerships.id'))
        .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id'))
        .addColumn('invoice_number', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('reference', 'text')
        .addColumn('notes', 'text')
        .addColumn('due_at', t.timestamp)
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('total_amount', t.numeric, (c) => c.notNull())
        .addColumn('properties', t.json)
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .addUniqueConstraint('invoices_business_number_uq', ['business_id', 'invoice_number'])
        .execute();
      // One live invoice per order. The create transaction checks it under the order's row lock;
      // this index is the backstop that holds even if some future write path forgets to.
      await sql`create unique index invoices_order_live_uq on invoices (order_id)
        where deleted_at is null and status <> 'VOIDED'`.execute(db);
      // The list's page order and its status filter.
      await db.schema.createIndex('invoices_business_created_idx').on('invoices')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      await db.schema.createIndex('invoices_business_status_idx').on('invoices')
        .columns(['business_id', 'status', 'created_at desc']).execute();

      await db.schema.createTable('invoice_line_items')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('invoice_id', 'text', (c) => c.notNull().references('invoices.id'))
        // No foreign key: line items are a snapshot, and an order PATCH may delete the item later.
        .addColumn('order_item_id', 'text', (c) => c.notNull())
        .addColumn('item_variant_id', 'text', (c) => c.notNull().references('item_variants.id'))
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('quantity', t.numeric, (c) => c.notNull())
        .addColumn('unit_amount', t.numeric, (c) => c.notNull())
        .addColumn('line_amount', t.numeric, (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('line_number', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('invoice_line_items_invoice_idx').on('invoice_line_items').columns(['invoice_id']).execute();
    },
  };
}
