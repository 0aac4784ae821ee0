import { sql, type Updateable } from 'kysely';
import type { Decimal } from 'decimal.js';
import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';
import type { OrderTable } from '../orders/table.ts';
import type { WriteContext } from '../write/runner.ts';
import { changeOrder, type LockedOrder } from './order-effects.ts';
import { dec } from './quantities.ts';
import type { Shipment } from './shipment-schema.ts';

type Follows = { status: string; shipped_at: string; delivered_at: string | null } | null;

/** The order's shipments not voided, summed up: how many, how many delivered and returned, the latest times. */
interface LiveShipments {
  count: number;
  delivered: number;
  returned: number;
  shippedAt: string | null;
  deliveredAt: string | null;
}

/** An order's lines and shipments as a write sees them before or after it. */
export interface ShipmentsView {
  /** What may ship of each line (quantities.ts shippableOf). */
  shippable: Map<string, Decimal>;
  /** What shipments not voided hold of each line (shipped-quantities.ts). */
  shipped: Map<string, Decimal>;
  /** The shipment the write makes or changes, as it is in this view; null if none or not yet made. */
  shipment: Shipment | null;
}

const later = (a: string | null, b: string | null) =>
  a === null ? b : b === null || Date.parse(a) >= Date.parse(b) ? a : b;

/** Whether every line that may ship has shipped: only then do shipments say something of the order. */
function everyLineShipped({ shippable, shipped }: ShipmentsView): boolean {
  const open = [...shippable].filter(([, limit]) => limit.isPositive() && !limit.isZero());
  return open.length > 0 && open.every(([id, limit]) => !(shipped.get(id) ?? dec(0)).lessThan(limit));
}

/**
 * What the order's status, shippedAt and deliveredAt are by its shipments: once every line that may
 * ship has shipped, IN_TRANSIT with the latest shipment's shippedAt; DELIVERED when every one of
 * them is delivered or returned, some delivered; RETURNED when every one is returned. Null while
 * lines are left to ship: shipments then say nothing of the order.
 */
function followedBy(view: ShipmentsView, others: LiveShipments): Follows {
  if (!everyLineShipped(view)) return null;
  const one = view.shipment?.status === 'VOIDED' ? null : view.shipment;
  const live = one
    ? {
        count: others.count + 1,
        delivered: others.delivered + (one.status === 'DELIVERED' ? 1 : 0),
        returned: others.returned + (one.status === 'RETURNED' ? 1 : 0),
        shippedAt: later(others.shippedAt, one.shippedAt),
        deliveredAt: later(others.deliveredAt, one.deliveredAt),
      }
    : others;
  if (live.count === 0) return null;
  const returned = live.returned === live.count;
  const delivered = !returned && live.delivered + live.returned === live.count;
  return {
    status: returned ? 'RETURNED' : delivered ? 'DELIVERED' : 'IN_TRANSIT',
    shipped_at: live.shippedAt!,
    delivered_at: delivered ? live.deliveredAt : null,
  };
}

/** The order's shipments not voided other than `except`, summed up in one indexed read of the order's shipments. */
async function otherLiveShipments(db: Db, businessId: string, orderId: string, except: string | null) {
  const row = await db
    .selectFrom('shipments')
    .select([
      sql<number | string>`count(*)`.as('count'),
      sql<number | string | null>`sum(case when status = 'DELIVERED' then 1 else 0 end)`.as('delivered'),
      sql<number | string | null>`sum(case when status = 'RETURNED' then 1 else 0 end)`.as('returned'),
      sql<Date | string | null>`max(shipped_at)`.as('shipped_at'),
      sql<Date | string | null>`max(delivered_at)`.as('delivered_at'),
    ])
    .where('business_id', '=', businessId)
    .where('order_id', '=', orderId)
    .where('status', '<>', 'VOIDED')
    .$if(except !== null, (q) => q.where('id', '<>', except!))
    .executeTakeFirstOrThrow();
  return {
    count: Number(row.count),
    delivered: Number(row.delivered ?? 0),
    returned: Number(row.returned ?? 0),
    shippedAt: toIso(row.shipped_at),
    deliveredAt: toIso(row.delivered_at),
  };
}

/**
 * The order fields to set when what its shipments say of it changed with this write, and only then:
 * a status the order was given by a PATCH since stays until the shipments say something new (last
 * write wins). A write that leaves lines to ship says nothing, so the order keeps its status; the
 * order's other shipments are read only when every line has shipped after the write.
 */
export async function followSet(
  ctx: WriteContext,
  order: LockedOrder,
  before: ShipmentsView,
  after: ShipmentsView,
): Promise<Updateable<OrderTable>> {
  if (!everyLineShipped(after)) return {};
  const except = after.shipment?.id ?? null;
  const others = await otherLiveShipments(ctx.trx, ctx.businessId, order.row.id, except);
  const [was, now] = [followedBy(before, others), followedBy(after, others)];
  if (now === null || JSON.stringify(was) === JSON.stringify(now)) return {};
  const { row } = order;
  const set: Updateable<OrderTable> = {};
  if (row.status !== now.status) set.status = now.status;
  if (toIso(row.shipped_at) !== now.shipped_at) set.shipped_at = now.shipped_at;
  if (now.status === 'DELIVERED' && toIso(row.delivered_at) !== now.delivered_at) set.delivered_at = now.delivered_at;
  // On its way again: not delivered. A RETURNED order keeps when it was delivered, if it was.
  if (now.status === 'IN_TRANSIT' && row.delivered_at !== null) set.delivered_at = null;
  return set;
}

/** Moves the order as its shipments say, before and after this write, with its own event. */
export async function followShipments(
  ctx: WriteContext,
  order: LockedOrder,
  before: ShipmentsView,
  after: ShipmentsView,
): Promise<void> {
  const set = await followSet(ctx, order, before, after);
  if (Object.keys(set).length > 0) await changeOrder(ctx, order, set, 'updated');
}
