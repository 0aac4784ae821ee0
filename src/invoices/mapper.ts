import type { Selectable } from 'kysely';
import type { InvoiceLineItemTable, InvoiceTable } from './table.ts';
import { readJson } from '../lib/json.ts';
import { formatAmount, toNumber } from '../lib/money.ts';
import { toIso } from '../lib/time.ts';
import type { Invoice, InvoiceLineItem } from './schema.ts';

export type InvoiceRow = Selectable<InvoiceTable>;
export type InvoiceLineItemRow = Selectable<InvoiceLineItemTable>;

export function toInvoiceLineItem(row: InvoiceLineItemRow): InvoiceLineItem {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    orderItemId: row.order_item_id,
    itemVariantId: row.item_variant_id,
    description: row.description,
    quantity: toNumber(row.quantity)!,
    unitAmount: formatAmount(row.unit_amount),
    lineAmount: formatAmount(row.line_amount),
    currency: row.currency,
    lineNumber: row.line_number,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export function toInvoice(row: InvoiceRow, lines: InvoiceLineItemRow[]): Invoice {
  return {
    id: row.id,
    invoiceNumber: row.invoice_number,
    partnershipId: row.partnership_id,
    orderId: row.order_id,
    shipmentId: row.shipment_id ?? null,
    status: row.status as Invoice['status'],
    reference: row.reference,
    notes: row.notes,
    dueAt: toIso(row.due_at),
    currency: row.currency,
    totalAmount: formatAmount(row.total_amount),
    properties: readJson(row.properties),
    version: Number(row.version),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    invoiceLineItems: lines.map(toInvoiceLineItem),
  };
}
