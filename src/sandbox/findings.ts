/**
 * **Findings**: what the simulated buyer found wrong with how the integration fulfilled the orders its
 * runs made, computed when read from the orders, acknowledgements and shipments as they are now, so a
 * finding the integration puts right goes away. Of the sandbox's latest `AWAITED` simulated orders,
 * the ones not deleted:
 * - **over-shipped**: its shipments not voided hold more of a line than may ship of it now, by the
 *   rule the API checks shipments with (0058: ordered, or the current acknowledgement's accepted
 *   quantity if less; a line no longer on the order, nothing); a cancelled order may ship nothing.
 *   The API refuses to ship more than that, so this comes of the buyer lowering or removing a line,
 *   or cancelling, after the integration shipped it, and the integration not voiding what it must;
 * - **not acknowledged in time**: its first acknowledgement came more than SANDBOX_ACKNOWLEDGE_MINUTES
 *   after the order was made, or none has and that time has passed; an order cancelled without an
 *   acknowledgement needs none.
 */
import { Decimal } from 'decimal.js';
import type { Db } from '../db/types.ts';
import { whereLive } from '../db/live.ts';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import { dec, plain, shippableOf } from '../fulfilment/quantities.ts';
import { loadOrderItems } from '../orders/items-repository.ts';
import { AWAITED } from './runs.ts';

export interface Finding {
  kind: 'over-shipped' | 'not-acknowledged';
  orderId: string;
  internalReference: string;
  runId: string;
  /** What is wrong, in a sentence. */
  detail: string;
}

type Lines = Array<{ orderItemId: string; quantity: number }>;

/** Per order item, the quantity in these shipments' lines (a removed line's too, which order lines no longer keep). */
function shippedOf(shipments: ReadonlyArray<{ lines: Lines }>): Map<string, Decimal> {
  const shipped = new Map<string, Decimal>();
  for (const shipment of shipments)
    for (const line of shipment.lines)
      shipped.set(line.orderItemId, (shipped.get(line.orderItemId) ?? new Decimal(0)).plus(dec(line.quantity)));
  return shipped;
}

const formatMinutes = (ms: number) => `${Math.round(ms / 6000) / 10} min`;

/** The findings of the sandbox's latest simulated orders, over-shipped first, then by order, newest first. */
export async function listFindings(
  db: Db,
  sandboxId: string,
  settings: { now: number; acknowledgeMs: number },
): Promise<{ checked: number; findings: Finding[] }> {
  const orders = await db
    .selectFrom('simulation_orders as s')
    .innerJoin('orders as o', (join) =>
      join.onRef('o.id', '=', 's.order_id').onRef('o.business_id', '=', 's.business_id'),
    )
    .select(['o.id', 'o.internal_reference', 'o.phase', 'o.created_at', 'o.acknowledgement_id', 's.run_id'])
    .where('s.business_id', '=', sandboxId)
    .where(whereLive('o'))
    .orderBy('s.created_at', 'desc')
    .orderBy('s.order_id', 'desc')
    .limit(AWAITED)
    .execute();
  if (orders.length === 0) return { checked: 0, findings: [] };
  const ids = orders.map((o) => o.id);
  const [items, acknowledgements, shipments] = await Promise.all([
    loadOrderItems(db, sandboxId, ids),
    db
      .selectFrom('acknowledgements')
      .select(['id', 'order_id', 'lines', 'created_at'])
      .where('business_id', '=', sandboxId)
      .where('order_id', 'in', ids)
      .execute(),
    db
      .selectFrom('shipments')
      .select(['order_id', 'lines'])
      .where('business_id', '=', sandboxId)
      .where('order_id', 'in', ids)
      .where('status', '!=', 'VOIDED')
      .execute(),
  ]);
  const firstAcknowledged = new Map<string, number>();
  for (const a of acknowledgements) {
    const at = Date.parse(toIso(a.created_at)!);
    if (!(at >= (firstAcknowledged.get(a.order_id) ?? Infinity))) firstAcknowledged.set(a.order_id, at);
  }
  const current = new Map(acknowledgements.map((a) => [a.id, readJson<Lines>(a.lines) ?? []]));
  const shipped = new Map<string, Array<{ lines: Lines }>>();
  for (const s of shipments)
    shipped.set(s.order_id, [...(shipped.get(s.order_id) ?? []), { lines: readJson<Lines>(s.lines) ?? [] }]);

  const overShipped: Finding[] = [];
  const late: Finding[] = [];
  for (const order of orders) {
    const base = { orderId: order.id, internalReference: order.internal_reference, runId: order.run_id };
    const lines = items.get(order.id) ?? [];
    const cancelled = order.phase === 'CANCELLED';
    const shippable = shippableOf(lines, order.acknowledgement_id ? (current.get(order.acknowledgement_id) ?? []) : []);
    const over: string[] = [];
    for (const [itemId, quantity] of shippedOf(shipped.get(order.id) ?? [])) {
      const line = lines.find((l) => l.id === itemId);
      const may = cancelled ? new Decimal(0) : (shippable.get(itemId) ?? new Decimal(0));
      if (quantity.greaterThan(may))
        over.push(
          `${line ? `line ${line.line_number}` : 'a removed line'} shipped ${plain(quantity)} of ${plain(may)}`,
        );
    }
    if (over.length > 0)
      overShipped.push({
        kind: 'over-shipped',
        ...base,
        detail: `${cancelled ? 'Cancelled; ' : ''}${over.join('; ')}`,
      });

    const made = Date.parse(toIso(order.created_at)!);
    const acknowledged = firstAcknowledged.get(order.id);
    if (acknowledged !== undefined && acknowledged - made > settings.acknowledgeMs)
      late.push({
        kind: 'not-acknowledged',
        ...base,
        detail: `Acknowledged after ${formatMinutes(acknowledged - made)}`,
      });
    else if (acknowledged === undefined && !cancelled && settings.now - made > settings.acknowledgeMs)
      late.push({
        kind: 'not-acknowledged',
        ...base,
        detail: `Not acknowledged after ${formatMinutes(settings.now - made)}`,
      });
  }
  return { checked: orders.length, findings: [...overShipped, ...late] };
}
