import { jsonRow, jsonRows, parseJsonValue, rowOf, type JsonColumns } from '../db/json-rows.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { toOrder, type OrderItemRow, type OrderRow } from './mapper.ts';
import type { Order } from './schema.ts';
import type { OrderItemTable } from './table.ts';
import type { Selectable } from 'kysely';

/**
 * The export's reads of orders: pages of whole orders in id order, from one snapshot. Rows come
 * as JSON made by the database (src/db/json-rows.ts): at a million orders the driver's cost per
 * value was most of an export's time.
 */

/** Every column of an order row, as `selectAll` gives them, but those of ORDER_APART. */
const ORDER_COLUMNS: JsonColumns<OrderRow> = {
  names: [
    'id',
    'business_id',
    'partnership_id',
    'membership_id',
    'integration_id',
    'phase',
    'status',
    'notes',
    'delivery_address',
    'expected_delivery_at',
    'delivered_at',
    'shipped_at',
    'shipped_by',
    'currency',
    'properties',
    'version',
    'ingested_at',
    'created_at',
    'updated_at',
    'deleted_at',
  ],
  numeric: [],
};

/**
 * Columns read as columns, beside the JSON: short texts that differ from order to order (SO
 * numbers, a customer's reference, totals). JSON.parse makes every string of up to 10 characters a
 * V8 internalized string, which is born in the old generation and freed only by a full collection:
 * over a long export they piled up in the server's memory (docs/performance.md).
 */
const ORDER_APART = ['internal_reference', 'external_reference', 'total_amount'] as const;

type ItemRow = Selectable<OrderItemTable>;

/** Every column of an order item row but the two its order gives (business_id, order_id). */
const ITEM_COLUMNS: JsonColumns<ItemRow> = {
  names: [
    'id',
    'item_list_entry_id',
    'item_variant_id',
    'item_id',
    'variant_name',
    'sku',
    'line_number',
    'quantity',
    'unit_of_measure',
    'currency',
    'price',
    'cost',
    'properties',
    'created_at',
    'updated_at',
  ],
  numeric: ['quantity', 'price', 'cost'],
};

/**
 * Live orders (or all, with includeDeleted) of the business after `afterId`, in id order, as the
 * API shows them: one page of an export.
 */
export async function exportOrders(
  db: Db,
  businessId: string,
  afterId: string,
  limit: number,
  options: { includeDeleted?: boolean } = {},
): Promise<Order[]> {
  // Each order with its items (a correlated subquery): one statement a page, so that on PostgreSQL
  // the next page is read whole while this one is written out (src/http/export.ts).
  const found = await db
    .selectFrom('orders')
    .select((eb) => [
      jsonRow(db, ORDER_COLUMNS).as('row'),
      ...ORDER_APART,
      eb
        .selectFrom('order_items')
        .select(jsonRows(db, ITEM_COLUMNS, 'order_items').as('items'))
        .where('order_items.business_id', '=', businessId)
        .whereRef('order_items.order_id', '=', 'orders.id')
        .as('items'),
    ])
    .where('business_id', '=', businessId)
    .$if(!options.includeDeleted, (q) => q.where(whereLive()))
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  const rows = found.map(({ row, items: _, ...apart }) =>
    Object.assign(rowOf(ORDER_COLUMNS, parseJsonValue(row)), apart),
  );
  return rows.map((r, i) => toOrder(r, itemsOf(businessId, r.id, found[i].items)));
}

/** Items in the order a read of them gives (src/orders/repository.ts loadOrderItems): by line, then id. */
const byLine = (a: OrderItemRow, b: OrderItemRow) =>
  a.line_number - b.line_number || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** An order's items from its JSON array of item rows (null when it has none), in the order loadOrderItems gives them. */
function itemsOf(businessId: string, orderId: string, items: unknown): OrderItemRow[] {
  if (items === null) return [];
  return parseJsonValue<unknown[][]>(items)
    .map((values) => {
      const row = rowOf(ITEM_COLUMNS, values);
      row.business_id = businessId;
      row.order_id = orderId;
      return row;
    })
    .sort(byLine);
}
