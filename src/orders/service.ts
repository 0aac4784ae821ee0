import { ApiError, notFound, validationError, type FieldErrors } from '../lib/errors.ts';
import { groupBy } from '../lib/group.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { multiply, sum, toDecimalString } from '../lib/money.ts';
import { findEffectiveEntries, type EffectivePrice, type VariantPrice } from '../pricing/effective-price.ts';
import { priceEntry } from '../pricing/resolve.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { sendNextCounterValue } from '../db/counters.ts';
import { createdEvent, namedEvent } from '../log/events.ts';
import {
  findEntries,
  insertOrders,
  markIngested,
  softDeleteOrder,
  type EntryRow,
  type NewOrder,
  type OrderRowWithItems,
} from './repository.ts';
import { loadOneOrderItems, loadOrderItems } from './items-repository.ts';
import { readOrderStamp } from './shared-reads.ts';
import type { Db } from '../db/types.ts';
import { toOrder, variantOf, type VariantFields } from './mapper.ts';
import type { CreateOrderInput, Order } from './schema.ts';

export const ORDER_NOT_FOUND = 'Order not found';
export const DUPLICATE_ENTRY =
  'one or more order items already exist; an order can only have one item per item list entry';
export const MIXED_CURRENCIES = 'All order items must be in one currency';
export const ONE_LINE_PER_ENTRY = 'An order has one item per item list entry: two of these items name the same one';

/** Each item of a new order that names the entry an earlier one does, by the field it named it with. */
function repeatedEntries(
  items: CreateOrderInput['orderItems'],
  entryIds: string[],
): Record<string, string> | undefined {
  const first = new Map<string, number>();
  const repeats: Record<string, string> = {};
  entryIds.forEach((entryId, i) => {
    const earlier = first.get(entryId);
    if (earlier === undefined) first.set(entryId, i);
    else
      repeats[`orderItems.${i}.${items[i].itemVariantId === undefined ? 'itemListEntryId' : 'itemVariantId'}`] =
        `The same item list entry as orderItems.${earlier}: send one item with the quantities added up`;
  });
  return Object.keys(repeats).length > 0 ? repeats : undefined;
}

/** Prices one entry with its own list's terms: the override, or the variant's price times the factor. */
export function priceOfEntry(entry: EntryRow) {
  return priceEntry(
    {
      price: String(entry.price),
      cost: entry.cost === null ? null : String(entry.cost),
      currency: entry.variant_currency,
    },
    {
      status: entry.status,
      globalPriceFactor: String(entry.global_price_factor),
      globalCostFactor: String(entry.global_cost_factor),
      startDate: null,
      endDate: null,
    },
    {
      id: entry.id,
      overrideFlatPrice: entry.override_flat_price === null ? null : String(entry.override_flat_price),
      currency: entry.entry_currency,
    },
  );
}

/** Sum of quantity × price, in decimal arithmetic. */
export const totalOf = (items: Array<{ quantity: string; price: string }>) =>
  sum(items.map((i) => multiply(i.quantity, i.price)));

/** A buyer's partnership: the order's owner, and the item list that prices it. */
export interface Partnership {
  id: string;
  itemListId: string | null;
}

/**
 * Creates an order for a buyer's partnership and returns it as the API shows it: each item
 * resolves to an entry (a variant through the buyer's effective list) and is priced from it
 * unless the request sets price or cost.
 */
export async function createOrder(
  ctx: WriteContext,
  partnership: Partnership,
  input: CreateOrderInput,
): Promise<Written<Order>> {
  // Its SO number is taken as its prices are read (one round trip on PostgreSQL): an order that
  // fails throws, and its write is undone with the number.
  const taken =
    input.internalReference === undefined ? await sendNextCounterValue(ctx.trx, ctx.businessId, 'order') : undefined;
  const [created] = await createOrders(ctx, [{ partnership, input }], taken);
  if (created instanceof ApiError) throw created;
  return created;
}

/**
 * Creates orders in one go, as `createOrder` each (bulk import applies a run of order lines this
 * way): each input's order, or the error that input alone fails with, decided before anything is
 * written. One read of the prices per item list, one multi-row statement per table for all of them.
 */
export async function createOrders(
  ctx: WriteContext,
  inputs: Array<{ partnership: Partnership; input: CreateOrderInput }>,
  taken?: { value: Promise<number> },
): Promise<(Written<Order> | ApiError)[]> {
  const { trx: db, businessId, now } = ctx;
  const byList = groupBy(inputs, ({ partnership }) => partnership.itemListId ?? '');
  const prices = new Map<string, Map<string, VariantPrice>>();
  for (const [list, group] of byList) {
    const variantIds = group.flatMap(({ input }) =>
      input.orderItems.flatMap((item) =>
        item.itemListEntryId === undefined && item.itemVariantId !== undefined ? [item.itemVariantId] : [],
      ),
    );
    prices.set(list, await findEffectiveEntries(db, businessId, list || null, variantIds, new Date(now)));
  }
  const byEntry = inputs.flatMap(({ input }) =>
    input.orderItems.flatMap((item) =>
      item.itemVariantId === undefined && item.itemListEntryId !== undefined ? [item.itemListEntryId] : [],
    ),
  );
  const entries = byEntry.length === 0 ? new Map<string, EntryRow>() : await findEntries(db, businessId, byEntry);
  const planned = inputs.map(({ partnership, input }) => {
    try {
      return planOrder(ctx, partnership, input, prices.get(partnership.itemListId ?? '')!, entries);
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
  });
  const stored = await insertOrders(
    db,
    planned.filter((p): p is NewOrder => !(p instanceof ApiError)),
    taken,
  );
  let next = 0;
  return planned.map((p) => {
    if (p instanceof ApiError) return p;
    const row = stored[next++];
    // The answer from the rows as stored, in the order a read gives them.
    const shown = row.items.sort((a, b) => a.line_number - b.line_number || (a.id < b.id ? -1 : 1));
    const resource = toOrder(row.order, shown);
    ctx.emit(createdEvent('order', resource));
    return { resource, before: null };
  });
}

/** One order's rows as `createOrder` stores them, from the prices and entries read for it; throws its error. */
function planOrder(
  { businessId, now }: WriteContext,
  partnership: Partnership,
  input: CreateOrderInput,
  prices: Map<string, VariantPrice>,
  entries: Map<string, EntryRow>,
): NewOrder {
  const errors: FieldErrors = {};
  const resolved = new Map<number, EffectivePrice & { unitOfMeasure: string | null; variant: VariantFields }>();
  for (const [i, item] of input.orderItems.entries()) {
    if ((item.itemListEntryId === undefined) === (item.itemVariantId === undefined)) {
      errors[`orderItems.${i}`] = 'Give exactly one of itemListEntryId and itemVariantId';
    } else if (item.itemVariantId !== undefined) {
      const price = prices.get(item.itemVariantId);
      if (price) {
        resolved.set(i, {
          ...price,
          variant: {
            item_variant_id: item.itemVariantId,
            item_id: price.itemId,
            variant_name: price.variantName,
            sku: price.sku,
          },
        });
      } else errors[`orderItems.${i}.itemVariantId`] = "Not a live variant on the buyer's item list";
    } else {
      const entry = entries.get(item.itemListEntryId!);
      if (entry)
        resolved.set(i, { ...priceOfEntry(entry), unitOfMeasure: entry.unit_of_measure, variant: variantOf(entry) });
      else errors[`orderItems.${i}.itemListEntryId`] = 'Not a live item list entry of this business';
    }
  }
  const entryIds = input.orderItems.map((item, i) => resolved.get(i)?.entryId ?? item.itemListEntryId ?? '');
  if (Object.keys(errors).length > 0) throw validationError(errors);
  const repeats = repeatedEntries(input.orderItems, entryIds);
  if (repeats) throw validationError(repeats, ONE_LINE_PER_ENTRY);

  const orderId = newId('ord');
  const items = input.orderItems.map((item, i) => {
    const price = resolved.get(i)!;
    return {
      id: newId('oi'),
      business_id: businessId,
      order_id: orderId,
      item_list_entry_id: price.entryId,
      ...price.variant,
      line_number: item.lineNumber ?? i + 1,
      quantity: toDecimalString(item.quantity),
      unit_of_measure: item.unitOfMeasure ?? price.unitOfMeasure ?? 'EA',
      currency: price.currency,
      price: item.price === undefined ? price.price : toDecimalString(item.price),
      cost: item.cost === undefined ? price.cost : toDecimalString(item.cost),
      properties: writeJson(item.properties),
      created_at: now,
      updated_at: now,
    };
  });
  const currencies = new Set(items.map((i) => i.currency));
  if (currencies.size > 1) throw validationError({ orderItems: MIXED_CURRENCIES });
  const [currency] = currencies;
  if (input.currency !== undefined && input.currency !== currency) {
    throw validationError({ currency: `Must equal the items' currency (${currency})` });
  }

  return {
    order: {
      id: orderId,
      business_id: businessId,
      partnership_id: partnership.id,
      membership_id: input.membershipId ?? null,
      phase: input.phase ?? 'PENDING',
      status: input.status ?? 'UNASSIGNED',
      // Without one given, the next SO number, which insertOrders takes.
      internal_reference: input.internalReference ?? '',
      external_reference: input.externalReference ?? null,
      notes: input.notes ?? null,
      delivery_address: input.deliveryAddress ?? null,
      expected_delivery_at: new Date(input.expectedDeliveryAt).toISOString(),
      currency,
      total_amount: totalOf(items as Array<{ quantity: string; price: string }>),
      properties: writeJson(input.properties),
      version: 1,
      created_at: now,
      updated_at: now,
    },
    items,
    numbered: input.internalReference === undefined,
  };
}

/** 404 "Order not found" unless the order lives: its stamp is read, not its row. */
export async function requireLiveOrder(db: Db, businessId: string, id: string): Promise<void> {
  if (!(await readOrderStamp(db, businessId, id))) throw notFound(ORDER_NOT_FOUND);
}

/**
 * Records the first announcement of a live order (true); repeats change nothing, as the update only
 * sets a missing time. `seen`, the order read before the business's lock, gives the event its items
 * when the order's version has not moved since.
 */
export async function ingestOrder(ctx: WriteContext, orderId: string, seen?: OrderRowWithItems): Promise<boolean> {
  const { trx, businessId } = ctx;
  const ingested = await markIngested(trx, businessId, orderId, ctx.now);
  if (!ingested) {
    await requireLiveOrder(trx, businessId, orderId);
    return false;
  }
  const items =
    seen && Number(seen.row.version) === Number(ingested.version)
      ? seen.items
      : await loadOneOrderItems(trx, businessId, orderId);
  ctx.emit(namedEvent('order', 'ingested', toOrder(ingested, items)));
  return true;
}

/** Soft-deletes a live order (src/orders/repository.ts softDeleteOrder); 404 when there is none. */
export async function deleteOrder(ctx: WriteContext, id: string): Promise<Written<Order>> {
  const deleted = await softDeleteOrder(ctx.trx, ctx.businessId, id, ctx.now);
  if (!deleted) throw notFound(ORDER_NOT_FOUND);
  const items = (await loadOrderItems(ctx.trx, ctx.businessId, [id])).get(id) ?? [];
  const resource = toOrder(deleted.after, items);
  ctx.emit(namedEvent('order', 'deleted', resource));
  return { resource, before: toOrder(deleted.before, items) };
}
