import { changesNothing, endUpdate, unchanged } from '../write/update.ts';
import { requireSomethingToUpdate } from '../lib/patch.ts';
import type { Insertable, Updateable } from 'kysely';
import { isUniqueViolation } from '../db/dialect.ts';
import type { InvoiceLineItemTable, InvoiceTable } from './table.ts';
import { conflict, notFound, validationError } from '../lib/errors.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { multiply, sum } from '../lib/money.ts';
import { parseDateTime } from '../lib/time.ts';
import { checkVersion, type ExpectedVersions } from '../lib/versions.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { createdEvent } from '../log/events.ts';
import { nextCounterValue } from '../db/counters.ts';
import { findOrderRow } from '../orders/repository.ts';
import { ORDER_NOT_FOUND } from '../orders/service.ts';
import { findShippedItemsToInvoice } from './shipped-items.ts';
import { findShipmentRow } from '../fulfilment/shipment-repository.ts';
import {
  findInvoice,
  findInvoiceRow,
  findLiveInvoiceForOrder,
  findOrderItemsToInvoice,
  insertInvoice,
  insertInvoiceLineItems,
  updateInvoiceRow,
} from './repository.ts';
import type { CreateInvoiceInput, Invoice, UpdateInvoiceInput } from './schema.ts';
import { toInvoice, type InvoiceRow } from './mapper.ts';

export const INVOICE_NOT_FOUND = 'Invoice not found';

export const formatInvoiceNumber = (n: number) => `INV-${String(n).padStart(6, '0')}`;

/**
 * The 409 of an invoice that would bill again what `live` bills (null: found by the unique index, which
 * names no invoice): the same shipment, the whole order beside one of its shipments, or the other way round.
 */
function alreadyInvoiced(
  shipmentId: string | null,
  live: { invoice_number: string; shipment_id: string | null } | null,
) {
  const number = live ? ` (${live.invoice_number})` : '';
  if (shipmentId !== null && (live === null || live.shipment_id === shipmentId))
    return conflict(`The shipment already has a live invoice${number}; void it before invoicing the shipment again`);
  if (shipmentId !== null)
    return conflict(
      `The order already has a live invoice of the whole order${number}, which bills its shipments; void it first`,
    );
  if (live?.shipment_id)
    return conflict(
      `The order already has a live invoice of one of its shipments${number}: ` +
        'an invoice of the whole order would bill it again; void it first',
    );
  return conflict(`The order already has a live invoice${number}; void it before invoicing the order again`);
}

/** A single-variant item's variant is named "Default", which says nothing on an invoice. */
export const describeLine = (itemName: string, variantName: string) =>
  variantName === 'Default' ? itemName : `${itemName} - ${variantName}`;

/** The partial unique index is the backstop for the one-live-invoice rule; its violation is the same 409. */
async function guardUnique<T>(write: () => Promise<T>, onViolation: () => Error): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw isUniqueViolation(error) ? onViolation() : error;
  }
}

/**
 * Invoices a live order: its items become line items priced as ordered; with `shipmentId`, that
 * shipment's quantities at the order's prices (src/invoices/shipped-items.ts). The order row is locked
 * first, so concurrent requests for one order queue and the second finds the first's invoice.
 */
export async function createInvoice(ctx: WriteContext, input: CreateInvoiceInput): Promise<Written<Invoice>> {
  const { trx: db, businessId, now } = ctx;
  const order = await findOrderRow(db, businessId, input.orderId, true);
  if (!order) throw notFound(ORDER_NOT_FOUND);
  const shipmentId = input.shipmentId ?? null;
  const live = await findLiveInvoiceForOrder(db, businessId, order.id, '', shipmentId);
  if (live) throw alreadyInvoiced(shipmentId, live);
  const items =
    shipmentId === null
      ? await findOrderItemsToInvoice(db, businessId, order.id)
      : await findShippedItemsToInvoice(db, businessId, order.id, shipmentId);
  if (items.length === 0) throw validationError({ orderId: 'The order has no items to invoice' });

  const invoiceId = newId('inv');
  const lines: Insertable<InvoiceLineItemTable>[] = items.map((item) => ({
    id: newId('ili'),
    business_id: businessId,
    invoice_id: invoiceId,
    order_item_id: item.id,
    item_variant_id: item.item_variant_id,
    description: describeLine(item.item_name, item.variant_name),
    quantity: String(item.quantity),
    unit_amount: String(item.price),
    line_amount: multiply(String(item.quantity), String(item.price)),
    currency: item.currency,
    line_number: item.line_number,
    created_at: now,
    updated_at: now,
  }));
  const invoiceNumber = formatInvoiceNumber(await nextCounterValue(db, businessId, 'invoice'));
  await guardUnique(
    () =>
      insertInvoice(db, {
        id: invoiceId,
        business_id: businessId,
        partnership_id: order.partnership_id,
        order_id: order.id,
        shipment_id: shipmentId,
        invoice_number: invoiceNumber,
        status: 'DRAFT',
        reference: input.reference ?? null,
        notes: input.notes ?? null,
        due_at: input.dueAt ? parseDateTime(input.dueAt) : null,
        currency: order.currency,
        total_amount: sum(lines.map((l) => l.line_amount)),
        properties: writeJson(input.properties),
        version: 1,
        created_at: now,
        updated_at: now,
      }),
    () => alreadyInvoiced(shipmentId, null),
  );
  await insertInvoiceLineItems(db, lines);
  const resource = (await findInvoice(db, businessId, invoiceId))!;
  ctx.emit(createdEvent('invoice', resource));
  return { resource, before: null };
}

function invoiceFields(input: UpdateInvoiceInput, storedProperties: unknown): Updateable<InvoiceTable> {
  return {
    ...(input.status !== undefined && { status: input.status }),
    ...(input.reference !== undefined && { reference: input.reference }),
    ...(input.notes !== undefined && { notes: input.notes }),
    ...(input.dueAt !== undefined && { due_at: input.dueAt === null ? null : parseDateTime(input.dueAt) }),
    ...(input.properties !== undefined && {
      properties: mergeStoredProperties(storedProperties, input.properties, 'properties'),
    }),
  };
}

/**
 * Applies a PATCH in the caller's transaction, under the invoice's row lock. Status moves freely;
 * the rules are that un-voiding must not give the order a second live invoice, nor bill a voided
 * shipment. The order itself is never touched.
 */
export async function patchInvoice(
  ctx: WriteContext,
  id: string,
  input: UpdateInvoiceInput,
  expected: ExpectedVersions | undefined,
): Promise<Written<Invoice>> {
  const { trx: db, businessId, now } = ctx;
  requireSomethingToUpdate(input);
  const row = await findInvoiceRow(db, businessId, id, true);
  if (!row) throw notFound(INVOICE_NOT_FOUND);
  checkVersion(expected, Number(row.version), 'invoice');
  const before = (await findInvoice(db, businessId, id))!;
  const revived = row.status === 'VOIDED' && input.status !== undefined && input.status !== 'VOIDED';
  const other = revived
    ? await findLiveInvoiceForOrder(db, businessId, row.order_id, id, row.shipment_id ?? null)
    : undefined;
  if (other)
    throw conflict(`The order already has another live invoice (${other.invoice_number}); this one stays VOIDED`);
  // As a voided shipment cannot be invoiced, its voided invoice cannot bill it again.
  if (revived && row.shipment_id && (await findShipmentRow(db, businessId, row.shipment_id))?.status === 'VOIDED')
    throw conflict('The shipment is voided: its invoice stays VOIDED');

  const fields = invoiceFields(input, row.properties);
  if (changesNothing(toInvoice(row, []), toInvoice({ ...row, ...fields } as InvoiceRow, []))) return unchanged(before);
  const version = Number(row.version) + 1;
  await guardUnique(
    () => updateInvoiceRow(db, businessId, id, { ...fields, version, updated_at: now }),
    () => conflict('The order already has another live invoice; this one stays VOIDED'),
  );
  const resource = (await findInvoice(db, businessId, id))!;
  return endUpdate(ctx, 'invoice', before, resource);
}
