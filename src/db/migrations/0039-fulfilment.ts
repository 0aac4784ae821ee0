import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * Fulfilment (src/fulfilment, docs/decisions/0058-fulfilment.md):
 * - `acknowledgements`: what the supplier accepts of an order, line by line, newest last;
 * - `shipments`: what left the warehouse, its packages and lines as JSON, with a version;
 * - three order columns for the current acknowledgement's summary, which the order's JSON shows;
 * - `invoices.shipment_id`: an invoice of one shipment. One live invoice per order becomes one per
 *   order without a shipment, and one per shipment.
 * New tables and nullable columns only: an earlier release runs beside them unchanged.
 */
export function fulfilment(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('acknowledgements')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull())
        .addColumn('decision', 'text', (c) => c.notNull())
        .addColumn('phase', 'text')
        .addColumn('notes', 'text')
        .addColumn('lines', t.json, (c) => c.notNull())
        .addColumn('decided_at', t.timestamp, (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('acknowledgements_order_idx')
        .on('acknowledgements')
        .columns(['business_id', 'order_id', 'created_at', 'id'])
        .execute();

      await db.schema
        .createTable('shipments')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('shipped_at', t.timestamp, (c) => c.notNull())
        .addColumn('delivered_at', t.timestamp)
        .addColumn('expected_delivery_at', t.timestamp)
        .addColumn('carrier', t.json)
        .addColumn('service', 'text')
        .addColumn('tracking_numbers', t.json, (c) => c.notNull())
        .addColumn('external_reference', 'text')
        .addColumn('properties', t.json)
        .addColumn('packages', t.json, (c) => c.notNull())
        .addColumn('lines', t.json, (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('voided_at', t.timestamp)
        .execute();
      await db.schema
        .createIndex('shipments_business_created_idx')
        .on('shipments')
        .columns(['business_id', 'created_at desc', 'id desc'])
        .execute();
      await db.schema
        .createIndex('shipments_business_updated_idx')
        .on('shipments')
        .columns(['business_id', 'updated_at', 'id'])
        .execute();
      await db.schema.createIndex('shipments_business_id_idx').on('shipments').columns(['business_id', 'id']).execute();
      await db.schema
        .createIndex('shipments_order_idx')
        .on('shipments')
        .columns(['business_id', 'order_id', 'created_at'])
        .execute();

      await db.schema.alterTable('orders').addColumn('acknowledgement_id', 'text').execute();
      await db.schema.alterTable('orders').addColumn('acknowledged_at', t.timestamp).execute();
      await db.schema.alterTable('orders').addColumn('acknowledgement_summary', 'text').execute();

      await db.schema.alterTable('invoices').addColumn('shipment_id', 'text').execute();
      await sql`drop index invoices_order_live_uq`.execute(db);
      await sql`create unique index invoices_order_live_uq on invoices (order_id)
        where deleted_at is null and status <> 'VOIDED' and shipment_id is null`.execute(db);
      await sql`create unique index invoices_shipment_live_uq on invoices (shipment_id)
        where deleted_at is null and status <> 'VOIDED' and shipment_id is not null`.execute(db);
    },
  };
}
