import { readOrderRowShared } from './shared-reads.ts';
import { insertOrderItemsQuery, loadOneOrderItems } from './items-repository.ts';
import type { Insertable, QueryResult, Selectable, Updateable } from 'kysely';
import { nextCounterValue, raiseCounterTo } from '../db/counters.ts';
import { anyOf, forUpdate } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import type { OrderItemTable, OrderTable } from './table.ts';
import { applyOrderChange, applyOrderChanges } from './read-model/index.ts';
import { toOrder, type OrderItemRow, type OrderRow } from './mapper.ts';
import type { Order } from './schema.ts';
import { groupBy } from '../lib/group.ts';
import { whereLive } from '../db/live.ts';
import { statement } from '../db/statement.ts';
import { sendRead } from '../db/pipeline.ts';

/** An order to insert with its items; `numbered`: it takes the business's next SO number for `internal_reference`. */
export interface NewOrder {
  order: Insertable<OrderTable>;
  items: Insertable<OrderItemTable>[];
  numbered: boolean;
}

/**
 * Inserts live orders of one business with their items, indexes their properties and counts them,
 * in the caller's transaction, and returns the rows as stored, in the order given: one multi-row
 * statement per table for all of them, and the SO numbers taken at once, in that order (or `taken`,
 * the last of as many numbers as orders numbered, taken by the caller).
 */
export async function insertOrders(
  db: Db,
  orders: NewOrder[],
  taken?: { value: Promise<number> },
): Promise<Array<{ order: OrderRow; items: Array<Selectable<OrderItemTable>> }>> {
  if (orders.length === 0) return [];
  const numbered = orders.filter((o) => o.numbered).length;
  // A number sent as a reference is not given again: the count moves past it first.
  const sent = Math.max(0, ...orders.map((o) => (o.numbered ? 0 : numberOf(o.order.internal_reference))));
  if (sent > 0) await raiseCounterTo(db, orders[0].order.business_id, 'order', sent);
  const last = async () =>
    taken ? await taken.value : await nextCounterValue(db, orders[0].order.business_id, 'order', numbered);
  let next = numbered === 0 ? 0 : (await last()) - numbered + 1;
  const rows = orders.map((o) => (o.numbered ? { ...o.order, internal_reference: formatReference(next++) } : o.order));
  // Sent one behind the other, their answers read after: one round trip on PostgreSQL (decision 0053).
  const orderInserts = [];
  for (const chunk of chunks(rows, ORDERS_PER_INSERT))
    orderInserts.push(await sendRead<OrderRow>(db, db.insertInto('orders').values(chunk).returningAll()));
  const itemInserts = [];
  for (const chunk of chunks(
    orders.flatMap((o) => o.items),
    ITEMS_PER_INSERT,
  ))
    itemInserts.push(await sendRead<Selectable<OrderItemTable>>(db, insertOrderItemsQuery(db, { rows: chunk })));
  // The orders' answers first: when their insert fails, its error is the one reported.
  const inserted = await rowsOf(orderInserts);
  const insertedItems = await rowsOf(itemInserts);
  await applyOrderChanges(
    db,
    inserted.map((after) => ({ before: null, after })),
  );
  const byId = new Map(inserted.map((row) => [row.id, row]));
  const itemsOf = groupBy(insertedItems, (row) => row.order_id);
  return rows.map((row) => ({ order: byId.get(row.id)!, items: itemsOf.get(row.id) ?? [] }));
}

/** Under both backends' bound-parameter limits (orders have 20 columns, their items 15). */
const ORDERS_PER_INSERT = 500;
const ITEMS_PER_INSERT = 1_000;

/** The rows of statements sent with `sendRead`, in the order sent. */
async function rowsOf<R>(sent: Array<{ answer: Promise<QueryResult<R>> }>): Promise<R[]> {
  const rows: R[] = [];
  for (const { answer } of sent) rows.push(...(await answer).rows);
  return rows;
}

function* chunks<T>(rows: T[], size: number): Generator<T[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

/** An SO number: `SO-000001`, with more digits past 999,999. */
const formatReference = (n: number) => `SO-${String(n).padStart(6, '0')}`;

/** The number of a reference written as `formatReference` writes it, within the counter's range; else 0. */
function numberOf(reference: string | null | undefined): number {
  const digits = reference && /^SO-(\d{6,9})$/.exec(reference)?.[1];
  if (!digits) return 0;
  const n = Number(digits);
  return formatReference(n) === reference ? n : 0;
}

/** A live order of this business; with `lock`, its row stays locked until the transaction ends. */
export async function findOrderRow(
  db: Db,
  businessId: string,
  id: string,
  lock = false,
): Promise<OrderRow | undefined> {
  const shared = lock ? null : await readOrderRowShared(db, businessId, id);
  if (shared !== null) return shared;
  const {
    rows: [row],
  } = await db.executeQuery(orderRowQuery(db, { businessId, id }, lock ? 'for update' : undefined));
  return row;
}

const orderRowQuery = statement((db, v: { businessId: string; id: string }, lock?: 'for update') => {
  const query = db
    .selectFrom('orders')
    .selectAll()
    .where('business_id', '=', v.businessId)
    .where('id', '=', v.id)
    .where(whereLive());
  return lock ? forUpdate(db, query) : query;
});

/**
 * Orders of this business by id, deleted or not, keyed by id. By primary key only, the business
 * checked on the rows: with `business_id = ?` in the statement, SQLite's planner (without
 * statistics) walked the business's whole index instead of looking each id up.
 */
export async function findOrderRows(db: Db, businessId: string, ids: string[]): Promise<Map<string, OrderRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('orders')
    .selectAll()
    .where(anyOf(db, 'id', ids))
    .execute();
  return new Map(rows.filter((r) => r.business_id === businessId).map((r) => [r.id, r]));
}

/** A live order row of this business with its items. */
export interface OrderRowWithItems {
  row: OrderRow;
  items: OrderItemRow[];
}

/**
 * A live order of this business with its items read after the row; with `lock`, the row stays
 * locked until the transaction ends. No row: undefined.
 */
export async function findOrderRowWithItems(
  db: Db,
  businessId: string,
  id: string,
  lock = false,
): Promise<OrderRowWithItems | undefined> {
  const row = await findOrderRow(db, businessId, id, lock);
  return row && { row, items: await loadOneOrderItems(db, businessId, id) };
}

/** An order row with its items, as the API shows it. */
export async function withItems(db: Db, row: OrderRow): Promise<Order> {
  return toOrder(row, await loadOneOrderItems(db, row.business_id, row.id));
}

export async function findOrder(db: Db, businessId: string, id: string): Promise<Order | undefined> {
  const row = await findOrderRow(db, businessId, id);
  return row && withItems(db, row);
}

/** Updates a live order row at `version` and returns it as stored; undefined when its version has moved. */
export async function updateOrderRow(
  db: Db,
  businessId: string,
  id: string,
  version: number,
  set: Updateable<OrderTable>,
): Promise<OrderRow | undefined> {
  return updateOrderRowQuery(db, businessId, id, version, set).executeTakeFirst();
}

/** The update of a live order at `version`, answering the row as stored (none when the version has moved). */
export const updateOrderRowQuery = (
  db: Db,
  businessId: string,
  id: string,
  version: number,
  set: Updateable<OrderTable>,
) =>
  db
    .updateTable('orders')
    .set(set)
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where('version', '=', version)
    .where(whereLive())
    .returningAll();

/** Item list entries of this business with their variants and lists, keyed by entry id. */
export async function findEntries(db: Db, businessId: string, entryIds: string[]) {
  const rows = await db
    .selectFrom('item_list_entries')
    .innerJoin('item_variants', 'item_variants.id', 'item_list_entries.item_variant_id')
    .innerJoin('item_lists', 'item_lists.id', 'item_list_entries.item_list_id')
    .select([
      'item_list_entries.id',
      'item_list_entries.override_flat_price',
      'item_list_entries.currency as entry_currency',
      'item_variants.price',
      'item_variants.cost',
      'item_variants.currency as variant_currency',
      'item_variants.unit_of_measure',
      'item_variants.id as item_variant_id',
      'item_variants.item_id',
      'item_variants.variant_name',
      'item_variants.sku',
      'item_lists.status',
      'item_lists.global_price_factor',
      'item_lists.global_cost_factor',
      'item_lists.start_date',
      'item_lists.end_date',
    ])
    .where('item_list_entries.business_id', '=', businessId)
    .where('item_list_entries.id', 'in', entryIds.length > 0 ? entryIds : [''])
    .where(whereLive('item_variants'))
    .where(whereLive('item_lists'))
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}
export type EntryRow = Awaited<ReturnType<typeof findEntries>> extends Map<string, infer R> ? R : never;

/**
 * Soft delete: deletedAt and phase DELETED, version raised, and the derived tables brought up to
 * date (src/orders/read-model). The row is read under its lock first (PostgreSQL), so what is
 * taken off them is what the update replaces. Undefined when there is no live order.
 */
export async function softDeleteOrder(
  db: Db,
  businessId: string,
  id: string,
  now: string,
): Promise<{ before: OrderRow; after: OrderRow } | undefined> {
  const before = await findOrderRow(db, businessId, id, true);
  if (!before) return undefined;
  const after = await db
    .updateTable('orders')
    .set((eb) => ({ deleted_at: now, updated_at: now, phase: 'DELETED', version: eb('version', '+', 1) }))
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where(whereLive())
    .returningAll()
    .executeTakeFirst();
  if (!after) return undefined;
  await applyOrderChange(db, before, after);
  return { before, after };
}

/** Records the first announcement only and returns the row as stored; later ones match no row and change nothing. */
export async function markIngested(db: Db, businessId: string, id: string, now: string): Promise<OrderRow | undefined> {
  return db
    .updateTable('orders')
    .set({ ingested_at: now })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where('ingested_at', 'is', null)
    .where(whereLive())
    .returningAll()
    .executeTakeFirst();
}
