import type { Db } from '../db/types.ts';
import { conflict, notFound, validationError } from '../lib/errors.ts';
import { toDecimalString } from '../lib/money.ts';
import { findOrderItemsToInvoice } from './repository.ts';
import { findShipmentRow, toShipment } from '../fulfilment/shipment-repository.ts';
import { SHIPMENT_NOT_FOUND } from '../fulfilment/shipment-service.ts';

/**
 * What an invoice of one shipment bills: the order's items that shipped, each with the quantity
 * the shipment holds of it, at the order's price. The caller holds the order's row lock, which
 * every write of the order's shipments takes first, so the shipment cannot be voided meanwhile.
 */
export async function findShippedItemsToInvoice(db: Db, businessId: string, orderId: string, shipmentId: string) {
  const row = await findShipmentRow(db, businessId, shipmentId);
  if (!row) throw notFound(SHIPMENT_NOT_FOUND);
  if (row.order_id !== orderId) throw validationError({ shipmentId: 'Not a shipment of this order' });
  if (row.status === 'VOIDED') throw conflict('The shipment is voided: there is nothing of it to invoice');
  const items = new Map((await findOrderItemsToInvoice(db, businessId, orderId)).map((item) => [item.id, item]));
  return toShipment(row).lines.map((line) => {
    const item = items.get(line.orderItemId);
    if (!item) throw conflict(`Order item ${line.orderItemId} of the shipment is no longer on the order`);
    return { ...item, quantity: toDecimalString(line.quantity) };
  });
}
