import { changesNothing, endUpdate, unchanged } from '../write/update.ts';
import { requireSomethingToUpdate } from '../lib/patch.ts';
import type { Updateable } from 'kysely';
import type { OrderTable } from './table.ts';
import { badRequest, conflict, notFound, validationError, type FieldErrors } from '../lib/errors.ts';
import { checkVersion, type ExpectedVersions } from '../lib/versions.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { toDecimalString } from '../lib/money.ts';
import { parseDateTime } from '../lib/time.ts';
import { itemUpdate, writeItemChanges } from './patch-items.ts';
import { findEntries, findOrderRowWithItems, updateOrderRowQuery, type OrderRowWithItems } from './repository.ts';
import { sendRead } from '../db/pipeline.ts';
import { applyOrderChange } from './read-model/index.ts';
import { toOrder, type OrderItemRow, type OrderRow } from './mapper.ts';
import type { Order, UpdateOrderInput } from './schema.ts';
import { DUPLICATE_ENTRY, MIXED_CURRENCIES, ORDER_NOT_FOUND, totalOf } from './service.ts';

const dateOrNull = (value: string | null) => (value === null ? null : parseDateTime(value));

function orderFields(order: NonNullable<UpdateOrderInput['order']>): Updateable<OrderTable> {
  return {
    ...(order.phase !== undefined && { phase: order.phase }),
    ...(order.status !== undefined && { status: order.status }),
    ...(order.externalReference !== undefined && { external_reference: order.externalReference }),
    ...(order.notes !== undefined && { notes: order.notes }),
    ...(order.deliveryAddress !== undefined && { delivery_address: order.deliveryAddress }),
    ...(order.expectedDeliveryAt !== undefined && { expected_delivery_at: parseDateTime(order.expectedDeliveryAt) }),
    ...(order.shippedBy !== undefined && { shipped_by: dateOrNull(order.shippedBy) }),
    ...(order.shippedAt !== undefined && { shipped_at: dateOrNull(order.shippedAt) }),
    ...(order.deliveredAt !== undefined && { delivered_at: dateOrNull(order.deliveredAt) }),
  };
}

/**
 * Where a PATCH's items disagree on currency, by the request's own paths: those unlike the items it
 * leaves as they were, or, when it leaves none so, every item it gives a currency.
 */
function mixedCurrencies(
  kept: OrderItemRow[],
  updates: NonNullable<UpdateOrderInput['updateOrderItems']>,
  creates: NonNullable<UpdateOrderInput['createOrderItems']>,
): FieldErrors {
  const given = [
    ...updates.flatMap((u, i) =>
      u.currency === undefined ? [] : [{ path: `updateOrderItems.${i}`, currency: u.currency }],
    ),
    ...creates.map((c, i) => ({ path: `createOrderItems.${i}`, currency: c.currency })),
  ];
  const changed = new Set(updates.filter((u) => u.currency !== undefined).map((u) => u.id));
  const base = kept.find((i) => !changed.has(i.id))?.currency;
  return Object.fromEntries(
    given.filter((g) => base === undefined || g.currency !== base).map((g) => [`${g.path}.currency`, MIXED_CURRENCIES]),
  );
}

/**
 * Applies a PATCH and returns the order before and after. `seen` was read before the business's
 * lock (src/orders/routes.ts), so the lock is held for the writes only: the update applies at the
 * version seen, and when that has moved the PATCH starts again from the order under its row lock.
 */
export async function patchOrder(
  ctx: WriteContext,
  id: string,
  input: UpdateOrderInput,
  expected: ExpectedVersions | undefined,
  seen?: OrderRowWithItems,
): Promise<Written<Order>> {
  const { trx: db, businessId, now } = ctx;
  requireSomethingToUpdate(input);
  const found = seen ?? (await findOrderRowWithItems(db, businessId, id, true));
  if (!found) throw notFound(ORDER_NOT_FOUND);
  const { row, items: stored } = found;
  checkVersion(expected, Number(row.version), 'order');

  const updates = input.updateOrderItems ?? [];
  const deletes = new Set(input.deleteOrderItems ?? []);
  const creates = input.createOrderItems ?? [];
  const updatedIds = new Set(updates.map((u) => u.id));
  const both = Object.fromEntries(
    (input.deleteOrderItems ?? []).flatMap((itemId, i) =>
      updatedIds.has(itemId)
        ? [[`deleteOrderItems.${i}`, 'Also in updateOrderItems: an item is updated or deleted, not both']]
        : [],
    ),
  );
  if (Object.keys(both).length > 0) throw validationError(both);
  const storedIds = new Set(stored.map((i) => i.id));
  const missing = [...new Set([...updates.map((u) => u.id), ...deletes])].filter((itemId) => !storedIds.has(itemId));
  if (missing.length > 0) throw notFound(`Order item(s) not found: ${missing.join(', ')}`);
  if (deletes.size > 0) {
    // What shipments hold of a line is decided under the order's row lock, which their writes take first.
    if (seen) return patchOrder(ctx, id, input, expected);
    const shipped = stored.filter((i) => deletes.has(i.id) && Number(i.shipped_quantity) > 0).map((i) => i.id);
    if (shipped.length > 0)
      throw conflict(
        `Order item(s) held by shipments cannot be deleted: ${shipped.join(', ')}; void those shipments first`,
      );
  }

  const entries =
    creates.length === 0
      ? new Map()
      : await findEntries(
          db,
          businessId,
          creates.map((c) => c.itemListEntryId),
        );
  const errors: FieldErrors = {};
  creates.forEach((c, i) => {
    if (!entries.has(c.itemListEntryId))
      errors[`createOrderItems.${i}.itemListEntryId`] = 'Not a live item list entry of this business';
  });
  if (Object.keys(errors).length > 0) throw validationError(errors);
  // Deletes apply first, so an item can be replaced by a new one for the same entry in one request.
  const kept = stored.filter((i) => !deletes.has(i.id));
  const entryIds = [...kept.map((i) => i.item_list_entry_id), ...creates.map((c) => c.itemListEntryId)];
  if (new Set(entryIds).size !== entryIds.length) throw badRequest(DUPLICATE_ENTRY);

  // The items as they will be, to check currencies and compute the total before writing.
  const updateOf = new Map(updates.map((u) => [u.id, u]));
  const final = [
    ...kept.map((i) => {
      const u = updateOf.get(i.id);
      return {
        quantity: u?.quantity === undefined ? String(i.quantity) : toDecimalString(u.quantity),
        price: u?.price === undefined ? String(i.price) : toDecimalString(u.price),
        currency: u?.currency ?? i.currency,
      };
    }),
    ...creates.map((c) => ({
      quantity: toDecimalString(c.quantity),
      price: toDecimalString(c.price),
      currency: c.currency,
    })),
  ];
  const currencies = new Set(final.map((i) => i.currency));
  if (currencies.size > 1) throw validationError(mixedCurrencies(kept, updates, creates));
  const [itemCurrency] = currencies;
  const order = input.order ?? {};
  if (order.currency !== undefined && itemCurrency !== undefined && order.currency !== itemCurrency) {
    throw validationError({ 'order.currency': `Must equal the items' currency (${itemCurrency})` });
  }

  const itemsChanged = updates.length + deletes.size + creates.length > 0;
  const properties =
    order.properties === undefined
      ? undefined
      : mergeStoredProperties(row.properties, order.properties, 'order.properties');
  const set = {
    ...orderFields(order),
    ...(properties !== undefined && { properties }),
    ...(order.currency !== undefined
      ? { currency: order.currency }
      : itemCurrency !== undefined && { currency: itemCurrency }),
    ...(order.totalAmount !== undefined
      ? { total_amount: toDecimalString(order.totalAmount) }
      : itemsChanged && { total_amount: totalOf(final) }),
  };
  const before = toOrder(row, stored);
  if (creates.length + deletes.size === 0) {
    const items = stored.map((i) => ({ ...i, ...itemUpdate(i, input, now) }) as OrderItemRow);
    if (changesNothing(before, toOrder({ ...row, ...set } as OrderRow, items))) {
      // `seen` was read before the lock: the order as it is under its row lock decides.
      return seen ? patchOrder(ctx, id, input, expected) : unchanged(before);
    }
  }
  const version = Number(row.version) + 1;
  const orderUpdate = await sendRead<OrderRow>(
    db,
    updateOrderRowQuery(db, businessId, id, Number(row.version), { ...set, version, updated_at: now }),
  );
  // Updates of items alone travel behind the order's update, applying only if it did; deletes and creates wait for it.
  const alongside = itemsChanged && creates.length + deletes.size === 0;
  let items = alongside ? await writeItemChanges(db, businessId, id, version, stored, input, entries, now) : stored;
  const [updated] = (await orderUpdate.answer).rows;
  // The version has moved since `seen` was read: start again from the order under its row lock.
  if (!updated) return patchOrder(ctx, id, input, expected);
  if (itemsChanged && !alongside)
    items = await writeItemChanges(db, businessId, id, version, stored, input, entries, now);
  await applyOrderChange(db, row, updated);
  return endUpdate(ctx, 'order', before, toOrder(updated, items));
}
