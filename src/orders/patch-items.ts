import type { Updateable } from 'kysely';
import type { Db } from '../db/types.ts';
import type { OrderItemTable } from './table.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { toDecimalString } from '../lib/money.ts';
import { variantOf, type OrderItemRow, type VariantFields } from './mapper.ts';
import { deleteOrderItemsQuery, insertOrderItemsQuery, updateOrderItemQuery } from './items-repository.ts';
import type { UpdateOrderInput } from './schema.ts';

type ItemChanges = Pick<UpdateOrderInput, 'createOrderItems' | 'updateOrderItems' | 'deleteOrderItems'>;

/** What a PATCH's updates of one item set, several updates applying in the order sent; undefined when none. */
export function itemUpdate(
  stored: OrderItemRow,
  changes: ItemChanges,
  now: string,
): (Updateable<OrderItemTable> & { updated_at: string }) | undefined {
  let values: (Updateable<OrderItemTable> & { updated_at: string }) | undefined;
  for (const u of changes.updateOrderItems ?? []) {
    if (u.id !== stored.id) continue;
    values = {
      ...values,
      ...(u.quantity !== undefined && { quantity: toDecimalString(u.quantity) }),
      ...(u.unitOfMeasure !== undefined && { unit_of_measure: u.unitOfMeasure }),
      ...(u.currency !== undefined && { currency: u.currency }),
      ...(u.price !== undefined && { price: toDecimalString(u.price) }),
      ...(u.cost !== undefined && { cost: toDecimalString(u.cost) }),
      ...(u.lineNumber !== undefined && { line_number: u.lineNumber }),
      ...(u.properties !== undefined && {
        properties: mergeStoredProperties(
          values?.properties ?? stored.properties,
          u.properties,
          'updateOrderItems.properties',
        ),
      }),
      updated_at: now,
    };
  }
  return values;
}

/**
 * Writes a PATCH's item changes (checked by the caller) to the order's `current` items, in the
 * caller's transaction, after the order's own update to `orderVersion` at `now`: deletes, then
 * updates (several updates of one item apply in the order sent, as one write), then creates,
 * numbered after the order's last line unless they say. Returns the order's items as stored, in
 * line order. A created item records its entry's variant (`entries`). Updates alone may follow the
 * order's update before it has been answered: they apply only if it did (`updateOrderItemQuery`).
 */
export async function writeItemChanges(
  db: Db,
  businessId: string,
  orderId: string,
  orderVersion: number,
  current: OrderItemRow[],
  changes: ItemChanges,
  entries: Map<string, VariantFields>,
  now: string,
): Promise<OrderItemRow[]> {
  const items: OrderItemRow[] = [];
  const deletes = new Set(changes.deleteOrderItems ?? []);
  if (deletes.size > 0) await deleteOrderItemsQuery(db, businessId, orderId, [...deletes]).execute();
  for (const stored of current) {
    if (deletes.has(stored.id)) continue;
    const values = itemUpdate(stored, changes, now);
    if (values === undefined) items.push(stored);
    else {
      const {
        rows: [row],
      } = await db.executeQuery(
        updateOrderItemQuery(db, { businessId, orderId, orderVersion, now, id: stored.id, set: values }),
      );
      // None when the order's update did not apply: the caller starts again.
      if (row) items.push(row);
    }
  }

  let nextLine = Math.max(0, ...current.map((i) => i.line_number));
  const creates = (changes.createOrderItems ?? []).map((c) => ({
    id: newId('oi'),
    business_id: businessId,
    order_id: orderId,
    item_list_entry_id: c.itemListEntryId,
    ...variantOf(entries.get(c.itemListEntryId)!),
    line_number: c.lineNumber ?? ++nextLine,
    quantity: toDecimalString(c.quantity),
    unit_of_measure: c.unitOfMeasure,
    currency: c.currency,
    price: toDecimalString(c.price),
    cost: toDecimalString(c.cost),
    properties: writeJson(c.properties),
    created_at: now,
    updated_at: now,
  }));
  if (creates.length > 0) {
    const { rows } = await db.executeQuery(insertOrderItemsQuery(db, { rows: creates }));
    items.push(...rows);
  }
  return items.sort((a, b) => a.line_number - b.line_number || (a.id < b.id ? -1 : 1));
}
