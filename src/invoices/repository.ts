import type { Insertable, Updateable } from 'kysely';
import { forUpdate } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import type { InvoiceLineItemTable, InvoiceTable } from './table.ts';
import { toInvoice, type InvoiceLineItemRow, type InvoiceRow } from './mapper.ts';
import type { Invoice } from './schema.ts';
import { groupBy } from '../lib/group.ts';
import { whereLive } from '../db/live.ts';

export async function insertInvoice(db: Db, invoice: Insertable<InvoiceTable>): Promise<void> {
  await db.insertInto('invoices').values(invoice).execute();
}

export async function insertInvoiceLineItems(db: Db, lines: Insertable<InvoiceLineItemTable>[]): Promise<void> {
  if (lines.length > 0) await db.insertInto('invoice_line_items').values(lines).execute();
}

/** A live invoice of this business; with `lock`, its row stays locked until the transaction ends. */
export async function findInvoiceRow(
  db: Db,
  businessId: string,
  id: string,
  lock = false,
): Promise<InvoiceRow | undefined> {
  const query = db
    .selectFrom('invoices')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where(whereLive());
  return (lock ? forUpdate(db, query) : query).executeTakeFirst();
}

/**
 * The order's live invoice other than `exceptId` (neither deleted nor VOIDED) that an invoice of
 * `shipmentId` would double: any, for an invoice of the whole order (null); for one of a shipment,
 * the whole order's or that shipment's.
 */
export async function findLiveInvoiceForOrder(
  db: Db,
  businessId: string,
  orderId: string,
  exceptId = '',
  shipmentId: string | null = null,
) {
  let query = db
    .selectFrom('invoices')
    .select(['id', 'invoice_number', 'shipment_id'])
    .where('business_id', '=', businessId)
    .where('order_id', '=', orderId)
    .where('id', '<>', exceptId)
    .where(whereLive())
    .where('status', '<>', 'VOIDED');
  if (shipmentId !== null)
    query = query.where((eb) => eb.or([eb('shipment_id', 'is', null), eb('shipment_id', '=', shipmentId)]));
  return query.executeTakeFirst();
}

/** The line items of several invoices: one query, whatever the count. */
export async function loadInvoiceLineItems(
  db: Db,
  businessId: string,
  invoiceIds: string[],
): Promise<Map<string, InvoiceLineItemRow[]>> {
  if (invoiceIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('invoice_line_items')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('invoice_id', 'in', invoiceIds)
    .orderBy('line_number')
    .orderBy('id')
    .execute();
  return groupBy(rows, (row) => row.invoice_id);
}

export async function findInvoice(db: Db, businessId: string, id: string): Promise<Invoice | undefined> {
  const row = await findInvoiceRow(db, businessId, id);
  return row && toInvoice(row, (await loadInvoiceLineItems(db, businessId, [id])).get(id) ?? []);
}

export async function updateInvoiceRow(
  db: Db,
  businessId: string,
  id: string,
  values: Updateable<InvoiceTable>,
): Promise<void> {
  await db.updateTable('invoices').set(values).where('business_id', '=', businessId).where('id', '=', id).execute();
}

/** An order's items with the names that describe them on an invoice, in line order. */
export async function findOrderItemsToInvoice(db: Db, businessId: string, orderId: string) {
  return db
    .selectFrom('order_items')
    .innerJoin('item_list_entries', 'item_list_entries.id', 'order_items.item_list_entry_id')
    .innerJoin('item_variants', 'item_variants.id', 'item_list_entries.item_variant_id')
    .innerJoin('items', 'items.id', 'item_variants.item_id')
    .select([
      'order_items.id',
      'order_items.quantity',
      'order_items.price',
      'order_items.currency',
      'order_items.line_number',
      'item_variants.id as item_variant_id',
      'item_variants.variant_name',
      'items.name as item_name',
    ])
    .where('order_items.business_id', '=', businessId)
    .where('order_items.order_id', '=', orderId)
    .orderBy('order_items.line_number')
    .orderBy('order_items.id')
    .execute();
}

/** Invoices of the business after `afterId`, in id order, with their line items: one page of an export. */
export async function exportInvoices(db: Db, businessId: string, afterId: string, limit: number): Promise<Invoice[]> {
  const rows = await db
    .selectFrom('invoices')
    .selectAll()
    .where('business_id', '=', businessId)
    .where(whereLive())
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  const lines = await loadInvoiceLineItems(
    db,
    businessId,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toInvoice(r, lines.get(r.id) ?? []));
}
