import type { Selectable, Updateable } from 'kysely';
import type { Db } from '../db/types.ts';
import type { Runnable, Statements } from '../db/together.ts';
import type { OrderItemTable } from './table.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { toDecimalString } from '../lib/money.ts';
import { withVariant, type OrderItemRow } from './mapper.ts';
import { deleteOrderItemsQuery, insertOrderItemsQuery, updateOrderItemQuery, type EntryRow } from './repository.ts';
import type { UpdateOrderInput } from './schema.ts';

type ItemChanges = Pick<UpdateOrderInput, 'createOrderItems' | 'updateOrderItems' | 'deleteOrderItems'>;

/**
 * The statements of a PATCH's item changes (checked by the caller) to the order's `current` items,
 * and the items as they will then be, in the order a read gives them: the rows with the updates
 * applied, and the new rows with their entries' variants (`entries`), so that the answer needs no
 * re-read.
 */
export function itemChangeStatements(
  db: Db, businessId: string, orderId: string, current: OrderItemRow[], changes: ItemChanges, entries: Map<string, EntryRow>, now: string,
): Statements<OrderItemRow[]> {
  const deletes = new Set(changes.deleteOrderItems ?? []);
  const statements: Runnable[] = [];
  if (deletes.size > 0) statements.push(deleteOrderItemsQuery(db, businessId, orderId, [...deletes]));
  // Each kept item: as stored, or the index of its update's answer.
  const kept: Array<{ stored: OrderItemRow; update?: number }> = [];
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
    if (values === undefined) kept.push({ stored });
    else kept.push({ stored, update: statements.push(updateOrderItemQuery(db, { businessId, id: stored.id, set: values })) - 1 });
  }

  let nextLine = Math.max(0, ...current.map((i) => i.line_number));
  const creates = (changes.createOrderItems ?? []).map((c) => ({
    id: newId('oi'), business_id: businessId, order_id: orderId, item_list_entry_id: c.itemListEntryId,
    line_number: c.lineNumber ?? ++nextLine, quantity: toDecimalString(c.quantity), unit_of_measure: c.unitOfMeasure,
    currency: c.currency, price: toDecimalString(c.price), cost: toDecimalString(c.cost),
    properties: writeJson(c.properties), created_at: now, updated_at: now,
  }));
  const insert = creates.length === 0 ? undefined : statements.push(insertOrderItemsQuery(db, { rows: creates })) - 1;
  return {
    statements,
    read(results) {
      const items: OrderItemRow[] = kept.map(({ stored, update }) => {
        if (update === undefined) return stored;
        const [row] = results[update] as Array<Selectable<OrderItemTable>>;
        if (!row) throw new Error(`order item ${stored.id} was not updated`);
        return withVariant(row, stored);
      });
      const created = insert === undefined ? [] : results[insert] as Array<Selectable<OrderItemTable>>;
      for (const row of created) items.push(withVariant(row, entries.get(row.item_list_entry_id)!));
      return items.sort((a, b) => a.line_number - b.line_number || (a.id < b.id ? -1 : 1));
    },
  };
}
