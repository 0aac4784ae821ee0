import type { Decimal } from 'decimal.js';
import type { Updateable } from 'kysely';
import { toIso } from '../lib/time.ts';
import type { OrderTable } from '../orders/table.ts';
import type { WriteContext } from '../write/runner.ts';
import { changeOrder, type LockedOrder } from './order-effects.ts';
import { dec, shippedOf } from './quantities.ts';
import type { Shipment } from './shipment-schema.ts';

type Follows = { status: string; shipped_at: string; delivered_at: string | null } | null;

const latest = (times: Array<string | null>) =>
  times
    .filter((t): t is string => t !== null)
    .sort((a, b) => Date.parse(a) - Date.parse(b))
    .at(-1) ?? null;

/**
 * What the order's status, shippedAt and deliveredAt are by its shipments: once every line that may
 * ship has shipped, IN_TRANSIT with the latest shipment's shippedAt; DELIVERED when every one of
 * them is delivered too. Null while lines are left to ship: shipments then say nothing of the order.
 */
export function followedBy(shippable: Map<string, Decimal>, shipments: Shipment[]): Follows {
  const live = shipments.filter((s) => s.status !== 'VOIDED');
  const shipped = shippedOf(live);
  const open = [...shippable].filter(([, limit]) => limit.isPositive() && !limit.isZero());
  if (live.length === 0 || open.length === 0) return null;
  if (open.some(([id, limit]) => (shipped.get(id) ?? dec(0)).lessThan(limit))) return null;
  const delivered = live.every((s) => s.status === 'DELIVERED');
  return {
    status: delivered ? 'DELIVERED' : 'IN_TRANSIT',
    shipped_at: latest(live.map((s) => s.shippedAt))!,
    delivered_at: delivered ? latest(live.map((s) => s.deliveredAt)) : null,
  };
}

/**
 * The order fields to set when what its shipments say of it changed with this write, and only then:
 * a status the order was given by a PATCH since stays until the shipments say something new (last
 * write wins). A void that leaves lines to ship says nothing, so the order keeps its status.
 */
export function followSet(row: LockedOrder['row'], was: Follows, now: Follows): Updateable<OrderTable> {
  if (now === null || JSON.stringify(was) === JSON.stringify(now)) return {};
  const set: Updateable<OrderTable> = {};
  if (row.status !== now.status) set.status = now.status;
  if (toIso(row.shipped_at) !== now.shipped_at) set.shipped_at = now.shipped_at;
  if (now.status === 'DELIVERED' && toIso(row.delivered_at) !== now.delivered_at) set.delivered_at = now.delivered_at;
  return set;
}

/** Moves the order as its shipments say, before and after this write, with its own event. */
export async function followShipments(
  ctx: WriteContext,
  order: LockedOrder,
  shippable: Map<string, Decimal>,
  before: Shipment[],
  after: Shipment[],
): Promise<void> {
  const set = followSet(order.row, followedBy(shippable, before), followedBy(shippable, after));
  if (Object.keys(set).length > 0) await changeOrder(ctx, order, set, 'updated');
}
