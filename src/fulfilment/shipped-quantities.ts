import type { Decimal } from 'decimal.js';
import { sql } from 'kysely';
import { exactDecimalSum, jsonArrayRows } from '../db/dialect-json.ts';
import type { Db } from '../db/types.ts';
import type { LockedOrder } from './order-effects.ts';
import { dec, plain } from './quantities.ts';
import type { Shipment } from './shipment-schema.ts';

/**
 * What shipments not voided hold of each order line, kept in `order_items.shipped_quantity`
 * (migration 0045) by every write that makes or voids a shipment, under the order's row lock that
 * such writes take first: so a new shipment is checked against its order's lines as read with the
 * order, whatever the number of its shipments, and what is checked is what is committed.
 */
export const shippedOf = (order: LockedOrder): Map<string, Decimal> =>
  new Map(order.items.map((item) => [item.id, dec(item.shipped_quantity)]));

/**
 * Adds a shipment's lines to its order's lines (`sign` -1: takes them off, a void), in the row and in
 * `order.items`. A line of the shipment whose order line was since deleted is no longer kept.
 */
export async function addShipped(db: Db, order: LockedOrder, lines: Shipment['lines'], sign: 1 | -1): Promise<void> {
  for (const line of lines) {
    const item = order.items.find((i) => i.id === line.orderItemId);
    if (!item) continue;
    const next = dec(item.shipped_quantity).plus(dec(line.quantity).times(sign));
    await db
      .updateTable('order_items')
      .set({ shipped_quantity: plain(next) })
      .where('business_id', '=', item.business_id)
      .where('id', '=', item.id)
      .execute();
    item.shipped_quantity = plain(next);
  }
}

/** Sets every line of a business's orders to what its shipments not voided hold (`cli projections rebuild`). */
export async function rebuildShippedQuantities(db: Db, businessId: string): Promise<void> {
  const line = jsonArrayRows(db, 's.lines', 'l');
  // A quantity has at most 6 decimal places (the orders' schema).
  const quantity = exactDecimalSum(db, line.number('quantity'), 6);
  await sql`update order_items set shipped_quantity = '0' where business_id = ${businessId} and shipped_quantity <> '0'`.execute(
    db,
  );
  await sql`update order_items set shipped_quantity = ${quantity.text(sql.ref('shipped.q'))}
    from (select ${line.text('orderItemId')} as id, ${quantity.sum} as q from shipments s cross join ${line.from}
      where s.business_id = ${businessId} and s.status <> 'VOIDED' group by 1) shipped
    where order_items.business_id = ${businessId} and order_items.id = shipped.id`.execute(db);
}
