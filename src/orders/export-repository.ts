import { anyOf } from '../db/dialect.ts';
import { jsonRow, jsonRows, parseJsonValue, rowOf, type JsonColumns } from '../db/json-rows.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { toOrder, type OrderItemRow, type OrderRow, type VariantFields } from './mapper.ts';
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
    'id', 'business_id', 'partnership_id', 'membership_id', 'integration_id', 'phase', 'status',
    'notes', 'delivery_address', 'expected_delivery_at', 'delivered_at', 'shipped_at', 'shipped_by',
    'currency', 'properties', 'version', 'ingested_at', 'created_at', 'updated_at', 'deleted_at',
  ],
  numeric: [],
};

/**
 * Columns read as columns, beside the JSON: short texts that differ from order to order (SO
 * numbers, a customer's reference, totals). JSON.parse makes every string of up to 10 characters a
 * V8 internalized string, which is born in the old generation and freed only by a full collection:
 * at 1M orders these were 80 MB of the server's RSS by the end of an export (docs/performance.md).
 */
const ORDER_APART = ['internal_reference', 'external_reference', 'total_amount'] as const;

type ItemRow = Selectable<OrderItemTable>;

/** Every column of an order item row but the two its order gives (business_id, order_id). */
const ITEM_COLUMNS: JsonColumns<ItemRow> = {
  names: ['id', 'item_list_entry_id', 'line_number', 'quantity', 'unit_of_measure', 'currency', 'price', 'cost', 'properties', 'created_at', 'updated_at'],
  numeric: ['quantity', 'price', 'cost'],
};

/**
 * What order items show of their entries' variants, by entry id, kept across the pages of one
 * export: its snapshot cannot change them, and a catalogue is small beside its orders, so each
 * entry is read once rather than joined to every item (that join was a third of an export's
 * reading). Cleared when it would grow past `exportTuning.entryCacheLimit`, to keep an export's memory flat.
 */
export type EntryVariants = Map<string, VariantFields>;
/** Tests set it lower, to clear the cache between and within pages. */
export const exportTuning = { entryCacheLimit: 50_000 };

/**
 * Live orders (or all, with includeDeleted) of the business after `afterId`, in id order, as the
 * API shows them: one page of an export. Pass the same `entries` to every page of one snapshot.
 */
export async function exportOrders(
  db: Db, businessId: string, afterId: string, limit: number, options: { includeDeleted?: boolean; entries?: EntryVariants } = {},
): Promise<Order[]> {
  // Each order with its items (a correlated subquery): one statement a page, so that on PostgreSQL
  // the next page is read whole while this one is written out (src/events/export-routes.ts).
  const found = await db.selectFrom('orders')
    .select((eb) => [
      jsonRow(db, ORDER_COLUMNS).as('row'), ...ORDER_APART,
      eb.selectFrom('order_items').select(jsonRows(db, ITEM_COLUMNS, 'order_items').as('items'))
        .where('order_items.business_id', '=', businessId).whereRef('order_items.order_id', '=', 'orders.id').as('items'),
    ])
    .where('business_id', '=', businessId).$if(!options.includeDeleted, (q) => q.where(whereLive())).where('id', '>', afterId)
    .orderBy('id').limit(limit).execute();
  const rows = found.map(({ row, items: _, ...apart }) => Object.assign(rowOf(ORDER_COLUMNS, parseJsonValue(row)), apart));
  const items = await withVariants(db, businessId, found.map((f, i) => [rows[i].id, f.items]), options.entries ?? new Map());
  return rows.map((r) => toOrder(r, items.get(r.id) ?? []));
}

/** Items in the order a read of them gives (src/orders/repository.ts loadOrderItems): by line, then id. */
const byLine = (a: OrderItemRow, b: OrderItemRow) => a.line_number - b.line_number || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Each order's items (its JSON array of item rows, null when it has none) as loadOrderItems gives
 * them: an item whose entry or variant is gone is left out, as its inner join leaves it out.
 */
async function withVariants(db: Db, businessId: string, groups: Array<[string, unknown]>, entries: EntryVariants): Promise<Map<string, OrderItemRow[]>> {
  const byOrder = new Map<string, ItemRow[]>();
  const needed = new Set<string>();
  for (const [orderId, items] of groups) {
    if (items === null) continue;
    const rows = parseJsonValue<unknown[][]>(items).map((values) => {
      const row = rowOf(ITEM_COLUMNS, values);
      row.business_id = businessId;
      row.order_id = orderId;
      needed.add(row.item_list_entry_id);
      return row;
    });
    byOrder.set(orderId, rows);
  }
  await loadEntryVariants(db, businessId, needed, entries);
  const result = new Map<string, OrderItemRow[]>();
  for (const [orderId, rows] of byOrder) {
    const items: OrderItemRow[] = [];
    for (const row of rows) {
      const variant = entries.get(row.item_list_entry_id);
      // Onto the row itself: a spread copy of it (withVariant) made the export's objects slow to read, and doubled its garbage.
      if (variant) items.push(Object.assign(row, variant));
    }
    result.set(orderId, items.sort(byLine));
  }
  return result;
}

/** Reads the entries of `needed` the cache lacks; when they would not fit, clears it and reads all of `needed` again. */
async function loadEntryVariants(db: Db, businessId: string, needed: Set<string>, entries: EntryVariants): Promise<void> {
  let entryIds = [...needed].filter((id) => !entries.has(id));
  if (entryIds.length === 0) return;
  if (entries.size + entryIds.length > exportTuning.entryCacheLimit) {
    entries.clear();
    entryIds = [...needed];
  }
  const rows = await db.selectFrom('item_list_entries')
    .innerJoin('item_variants', 'item_variants.id', 'item_list_entries.item_variant_id')
    .select(['item_list_entries.id', 'item_variants.id as item_variant_id', 'item_variants.item_id', 'item_variants.variant_name', 'item_variants.sku'])
    .where('item_list_entries.business_id', '=', businessId).where(anyOf(db, 'item_list_entries.id', entryIds))
    .execute();
  for (const { id, ...variant } of rows) entries.set(id, variant);
}
