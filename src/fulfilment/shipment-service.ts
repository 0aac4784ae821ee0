import type { Updateable } from 'kysely';
import { createdEvent, namedEvent } from '../log/events.ts';
import { diffResource } from '../log/changes.ts';
import { conflict, notFound, validationError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { requireSomethingToUpdate } from '../lib/patch.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { parseDateTime } from '../lib/time.ts';
import { checkVersion, type ExpectedVersions } from '../lib/versions.ts';
import { changesNothing, endUpdate, unchanged } from '../write/update.ts';
import type { WriteContext, Written } from '../write/runner.ts';
import { findAcknowledgement } from './acknowledgement-repository.ts';
import { followShipments } from './order-status.ts';
import { lockOrder, type LockedOrder } from './order-effects.ts';
import { findOrderRowWithItems } from '../orders/repository.ts';
import { shippableOf } from './quantities.ts';
import { addShipped, shippedOf } from './shipped-quantities.ts';
import { checkWithinShippable, readContents } from './shipment-contents.ts';
import {
  findShipmentRow,
  insertShipment,
  toShipment,
  updateShipmentRow,
  type ShipmentRow,
} from './shipment-repository.ts';
import type { CreateShipmentInput, Shipment, UpdateShipmentInput } from './shipment-schema.ts';
import type { ShipmentTable } from './table.ts';

export const SHIPMENT_NOT_FOUND = 'Shipment not found';

const dateOrNull = (value: string | null | undefined) => (value == null ? null : parseDateTime(value));

/** What may ship of each line of a locked order, by its current acknowledgement. */
async function shippableNow(ctx: WriteContext, order: LockedOrder) {
  const ack = order.row.acknowledgement_id
    ? await findAcknowledgement(ctx.trx, ctx.businessId, order.row.acknowledgement_id)
    : undefined;
  return shippableOf(order.items, ack?.lines ?? []);
}

/**
 * Records a shipment of a live order under the order's row lock, which every write of the order's
 * lines and shipments takes first: so what is checked is what is committed, on any backend and
 * instance. The order follows its shipments (src/fulfilment/order-status.ts) in the same write.
 */
export async function createShipment(
  ctx: WriteContext,
  orderId: string,
  input: CreateShipmentInput,
): Promise<Written<Shipment>> {
  const order = await lockOrder(ctx, orderId);
  const items = new Map(order.items.map((item) => [item.id, item]));
  const contents = readContents(input, items);
  const shippable = await shippableNow(ctx, order);
  const shipped = shippedOf(order);
  checkWithinShippable(contents.lines, items, shippable, shipped);
  const row = await insertShipment(ctx.trx, {
    id: newId('shp'),
    business_id: ctx.businessId,
    order_id: orderId,
    status: 'IN_TRANSIT',
    shipped_at: input.shippedAt === undefined ? ctx.now : parseDateTime(input.shippedAt),
    delivered_at: null,
    expected_delivery_at: dateOrNull(input.expectedDeliveryAt),
    carrier: writeJson(input.carrier ? { name: input.carrier.name, scac: input.carrier.scac ?? null } : null),
    service: input.service ?? null,
    tracking_numbers: JSON.stringify(input.trackingNumbers ?? []),
    external_reference: input.externalReference ?? null,
    properties: writeJson(input.properties),
    packages: JSON.stringify(contents.packages),
    lines: JSON.stringify(contents.lines),
    version: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
    voided_at: null,
  });
  const resource = toShipment(row);
  ctx.emit(createdEvent('shipment', resource));
  await addShipped(ctx.trx, order, resource.lines, 1);
  const before = { shippable, shipped, shipment: null };
  await followShipments(ctx, order, before, { shippable, shipped: shippedOf(order), shipment: resource });
  return { resource, before: null };
}

/** A shipment's columns a PATCH sets; DELIVERED without a time takes now only when it was not DELIVERED already. */
function shipmentFields(input: UpdateShipmentInput, stored: ShipmentRow, now: string): Updateable<ShipmentTable> {
  const delivered = input.status === 'DELIVERED' && input.deliveredAt === undefined && stored.status !== 'DELIVERED';
  return {
    ...(input.carrier !== undefined && {
      carrier: writeJson(input.carrier ? { name: input.carrier.name, scac: input.carrier.scac ?? null } : null),
    }),
    ...(input.service !== undefined && { service: input.service }),
    ...(input.trackingNumbers !== undefined && { tracking_numbers: JSON.stringify(input.trackingNumbers) }),
    ...(input.expectedDeliveryAt !== undefined && { expected_delivery_at: dateOrNull(input.expectedDeliveryAt) }),
    ...(input.externalReference !== undefined && { external_reference: input.externalReference }),
    ...(input.status !== undefined && { status: input.status }),
    ...(input.deliveredAt !== undefined && { delivered_at: dateOrNull(input.deliveredAt) }),
    ...(delivered && { delivered_at: now }),
    // On its way again: not delivered.
    ...(input.status === 'IN_TRANSIT' && input.deliveredAt === undefined && { delivered_at: null }),
    ...(input.properties !== undefined && {
      properties: mergeStoredProperties(stored.properties, input.properties, 'properties'),
    }),
  };
}

/**
 * A DELIVERED shipment was delivered at a time, one IN_TRANSIT was not, and a delivery time sent (`sent`; not the write's
 * own, which a shippedAt given ahead may follow) is not before it shipped.
 */
function checkTimes(shipment: Shipment, sent: boolean): void {
  if (shipment.status === 'DELIVERED' && shipment.deliveredAt === null)
    throw validationError({
      deliveredAt: 'A DELIVERED shipment has a delivery time: leave deliveredAt out to take now',
    });
  if (shipment.status === 'IN_TRANSIT' && shipment.deliveredAt !== null)
    throw validationError({ deliveredAt: 'A shipment IN_TRANSIT has no delivery time: send status DELIVERED with it' });
  if (sent && Date.parse(shipment.deliveredAt!) < Date.parse(shipment.shippedAt))
    throw validationError({ deliveredAt: `Must not be before the shipment's shippedAt (${shipment.shippedAt})` });
}

/**
 * Locks the shipment's order, then the shipment: the order first, as every write of its lines does.
 * A deleted order's shipments stay readable, as history, and change no more (409).
 */
async function lockShipment(ctx: WriteContext, id: string) {
  const peek = await findShipmentRow(ctx.trx, ctx.businessId, id);
  if (!peek) throw notFound(SHIPMENT_NOT_FOUND);
  const order = await findOrderRowWithItems(ctx.trx, ctx.businessId, peek.order_id, true);
  if (!order) throw conflict("The shipment's order was deleted: its shipments no longer change");
  const row = (await findShipmentRow(ctx.trx, ctx.businessId, id, true))!;
  return { order, row };
}

/** A PATCH: tracking, carrier, status (not VOIDED), deliveredAt, properties; a voided shipment is a 409. */
export async function patchShipment(
  ctx: WriteContext,
  id: string,
  input: UpdateShipmentInput,
  expected: ExpectedVersions | undefined,
): Promise<Written<Shipment>> {
  requireSomethingToUpdate(input);
  const { order, row } = await lockShipment(ctx, id);
  checkVersion(expected, Number(row.version), 'shipment');
  if (row.status === 'VOIDED') throw conflict('The shipment is voided; record a new one instead');
  const before = toShipment(row);
  const fields = shipmentFields(input, row, ctx.now);
  const after = toShipment({ ...row, ...fields } as ShipmentRow);
  if (input.status !== undefined || input.deliveredAt !== undefined) checkTimes(after, input.deliveredAt != null);
  if (changesNothing(before, after)) return unchanged(before);
  const updated = await updateShipmentRow(ctx.trx, row, {
    ...fields,
    version: Number(row.version) + 1,
    updated_at: ctx.now,
  });
  const written = endUpdate(ctx, 'shipment', before, toShipment(updated));
  await followChange(ctx, order, before, written.resource);
  return written;
}

/** Voids a shipment: its quantities may ship again. A second void answers it as it is, changing nothing. */
export async function voidShipment(ctx: WriteContext, id: string): Promise<Shipment> {
  const { order, row } = await lockShipment(ctx, id);
  const before = toShipment(row);
  if (row.status === 'VOIDED') return before;
  const updated = toShipment(
    await updateShipmentRow(ctx.trx, row, {
      status: 'VOIDED',
      voided_at: ctx.now,
      version: Number(row.version) + 1,
      updated_at: ctx.now,
    }),
  );
  ctx.emit({ ...namedEvent('shipment', 'voided', updated), changes: diffResource(before, updated) });
  await followChange(ctx, order, before, updated);
  return updated;
}

/** The order follows a change of one of its shipments; a void takes the shipment's lines off its order's. */
async function followChange(ctx: WriteContext, order: LockedOrder, before: Shipment, after: Shipment) {
  const shippable = await shippableNow(ctx, order);
  const shipped = shippedOf(order);
  if (before.status !== 'VOIDED' && after.status === 'VOIDED') await addShipped(ctx.trx, order, after.lines, -1);
  await followShipments(
    ctx,
    order,
    { shippable, shipped, shipment: before },
    { shippable, shipped: shippedOf(order), shipment: after },
  );
}
