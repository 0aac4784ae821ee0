import type { Insertable, Updateable } from 'kysely';
import { anyOf } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import type { Db } from '../db/types.ts';
import { groupBy } from '../lib/group.ts';
import type { OrderItemRow } from './mapper.ts';
import { readOrderItemsShared } from './shared-reads.ts';
import type { OrderItemTable } from './table.ts';

/** Order items' statements: an order's own are in repository.ts. */

/** The insert of order items, answering the rows as stored. */
export const insertOrderItemsQuery = statement((db, v: { rows: Array<Insertable<OrderItemTable>> }) =>
  db.insertInto('order_items').values(v.rows).returningAll(),
);

/** The items of several orders: one query, whatever the count. */
export async function loadOrderItems(
  db: Db,
  businessId: string,
  orderIds: string[],
): Promise<Map<string, OrderItemRow[]>> {
  if (orderIds.length === 0) return new Map();
  return groupBy(await orderItemsQuery(db, businessId, orderIds).execute(), (row) => row.order_id);
}

/** Order item rows in line order. */
const orderItemsBase = (db: Db) =>
  db.selectFrom('order_items').selectAll('order_items').orderBy('order_items.line_number').orderBy('order_items.id');

const orderItemsQuery = (db: Db, businessId: string, orderIds: string[]) =>
  orderItemsBase(db)
    .where('order_items.business_id', '=', businessId)
    .where(anyOf(db, 'order_items.order_id', orderIds));

/** The items of one order: the same statement whatever the order. */
const oneOrderItemsQuery = statement((db, v: { businessId: string; orderId: string }) =>
  orderItemsBase(db).where('order_items.business_id', '=', v.businessId).where('order_items.order_id', '=', v.orderId),
);

/** The items of one order, in line order. */
export async function loadOneOrderItems(db: Db, businessId: string, orderId: string): Promise<OrderItemRow[]> {
  return (
    (await readOrderItemsShared(db, businessId, orderId)) ??
    (await db.executeQuery(oneOrderItemsQuery(db, { businessId, orderId }))).rows
  );
}

/**
 * The update of an order item, answering the row as stored, only if its order's own update applied:
 * the order is at `orderVersion`, updated at `now` (a time no other write of the business has), so
 * that it may be sent behind that update without waiting for its answer (src/orders/patch-service.ts).
 */
export const updateOrderItemQuery = statement(
  (
    db,
    v: {
      businessId: string;
      orderId: string;
      orderVersion: number;
      now: string;
      id: string;
      set: Updateable<OrderItemTable>;
    },
  ) =>
    db
      .updateTable('order_items')
      .set(v.set)
      .where('business_id', '=', v.businessId)
      .where('id', '=', v.id)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('orders')
            .select('orders.id')
            .where('orders.business_id', '=', v.businessId)
            .where('orders.id', '=', v.orderId)
            .where('orders.version', '=', v.orderVersion)
            .where('orders.updated_at', '=', v.now),
        ),
      )
      .returningAll(),
);

/** The delete of some of an order's items. */
export const deleteOrderItemsQuery = (db: Db, businessId: string, orderId: string, ids: string[]) =>
  db
    .deleteFrom('order_items')
    .where('business_id', '=', businessId)
    .where('order_id', '=', orderId)
    .where('id', 'in', ids);
