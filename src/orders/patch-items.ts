import type { Updateable } from 'kysely';
import type { Db } from '../db/types.ts';
import type { Runnable } from '../db/together.ts';
import { storedJson, storedRow } from '../db/as-stored.ts';
import type { OrderItemTable } from './table.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { toDecimalString } from '../lib/money.ts';
import { withVariant, type OrderItemRow } from './mapper.ts';
import { deleteOrderItemsQuery, insertOrderItemsQuery, updateOrderItemQuery, type EntryRow } from './repository.ts';
import type { UpdateOrderInput } from './schema.ts';

const JSON_COLUMNS = ['properties'] as const;

type ItemChanges = Pick<UpdateOrderInput, 'createOrderItems' | 'updateOrderItems' | 'deleteOrderItems'>;

/** A PATCH's item writes, and the items as they will then be. */
export interface ItemWrites {
  statements: Runnable[];
  /** In the order a read gives them, as the database will answer them (src/db/as-stored.ts). */
  items: OrderItemRow[];
}

/**
 * The statements of a PATCH's item changes (checked by the caller) to the order's `current` items,
 * and the items as they will then be: the rows with the updates applied, and the new rows with
 * their entries' variants (`entries`), so that the write needs no answer from its statements,
 * which go with its commit.
 */
export function itemChangeStatements(
  db: Db, businessId: string, orderId: string, current: OrderItemRow[], changes: ItemChanges, entries: Map<string, EntryRow>, now: string,
): ItemWrites {
  const deletes = new Set(changes.deleteOrderItems ?? []);
  const statements: Runnable[] = [];
  if (deletes.size > 0) statements.push(deleteOrderItemsQuery(db, businessId, orderId, [...deletes]));
  const items: OrderItemRow[] = [];
  for (const stored of current) {
    if (deletes.has(stored.id)) continue;
    // Several updates of one item apply in the order sent, as one write.
    let values: Updateable<OrderItemTable> | undefined;
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
          properties: mergeStoredProperties(values?.properties ?? stored.properties, u.properties, 'updateOrderItems.properties'),
        }),
        updated_at: now,
      };
    }
    if (values === undefined) items.push(stored);
    else {
      statements.push(updateOrderItemQuery(db, { businessId, id: stored.id, set: values }));
      items.push(storedRow(db, stored, values, JSON_COLUMNS));
    }
  }

  let nextLine = Math.max(0, ...current.map((i) => i.line_number));
  const creates = (changes.createOrderItems ?? []).map((c) => ({
    id: newId('oi'), business_id: businessId, order_id: orderId, item_list_entry_id: c.itemListEntryId,
    line_number: c.lineNumber ?? ++nextLine, quantity: toDecimalString(c.quantity), unit_of_measure: c.unitOfMeasure,
    currency: c.currency, price: toDecimalString(c.price), cost: toDecimalString(c.cost),
    properties: writeJson(c.properties), created_at: now, updated_at: now,
  }));
  if (creates.length > 0) statements.push(insertOrderItemsQuery(db, { rows: creates }));
  for (const row of creates) items.push(withVariant({ ...row, properties: storedJson(db, row.properties) }, entries.get(row.item_list_entry_id)!));
  return { statements, items: items.sort((a, b) => a.line_number - b.line_number || (a.id < b.id ? -1 : 1)) };
}
