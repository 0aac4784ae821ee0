import type { Updateable } from 'kysely';
import { diffResource } from '../log/changes.ts';
import { namedEvent, type EventAction } from '../log/events.ts';
import { notFound } from '../lib/errors.ts';
import { toOrder, type OrderItemRow, type OrderRow } from '../orders/mapper.ts';
import { applyOrderChange } from '../orders/read-model/index.ts';
import { findOrderRowWithItems, updateOrderRow } from '../orders/repository.ts';
import type { Order } from '../orders/schema.ts';
import { ORDER_NOT_FOUND } from '../orders/service.ts';
import type { OrderTable } from '../orders/table.ts';
import type { WriteContext } from '../write/runner.ts';

/**
 * What acknowledgements and shipments change of their order: its fields, in the same write, with a
 * new version, its derived tables kept (src/orders/read-model) and the order's own event. The
 * order's row lock is the first thing such a write takes, so writes of one order queue there.
 */
export interface LockedOrder {
  row: OrderRow;
  items: OrderItemRow[];
}

export async function lockOrder(ctx: WriteContext, orderId: string): Promise<LockedOrder> {
  const found = await findOrderRowWithItems(ctx.trx, ctx.businessId, orderId, true);
  if (!found) throw notFound(ORDER_NOT_FOUND);
  return found;
}

/** Sets `set` on the order and emits `order.<name>` with the changes. Answers the order as it is now. */
export async function changeOrder(
  ctx: WriteContext,
  order: LockedOrder,
  set: Updateable<OrderTable>,
  name: EventAction<'order'>,
): Promise<Order> {
  const before = toOrder(order.row, order.items);
  // The row is locked since lockOrder, so its version cannot have moved.
  const updated = await updateOrderRow(ctx.trx, ctx.businessId, order.row.id, Number(order.row.version), {
    ...set,
    version: Number(order.row.version) + 1,
    updated_at: ctx.now,
  });
  if (!updated) throw new Error(`order ${order.row.id} changed under its row lock`);
  await applyOrderChange(ctx.trx, order.row, updated);
  const after = toOrder(updated, order.items);
  ctx.emit({ ...namedEvent('order', name, after), changes: diffResource(before, after) });
  order.row = updated;
  return after;
}
