/**
 * The simulated buyer: orders as a buyer's system would send them, in a sandbox only, so that an
 * integration's intake, polling, feed and webhooks have something to take in. Each order is made by
 * the same service as `POST /buyers/{id}/orders`, so it is priced, numbered and announced the same.
 */
import { BUYER_NOT_FOUND } from '../buyers/service.ts';
import { conflict, notFound } from '../lib/errors.ts';
import type { CreateOrderInput, Order } from '../orders/schema.ts';
import { createOrder } from '../orders/service.ts';
import type { WriteContext } from '../write/runner.ts';
import { findSimulationBuyer, pickListVariants } from './repository.ts';
import type { SimulateOrdersInput } from './schema.ts';

export const NOT_A_SANDBOX =
  "Simulations run in a sandbox only: send a sandbox's id in X-Business-Id with one of its test keys (sl_test_)";
export const NOTHING_TO_ORDER =
  'The sandbox has no live buyer with a variant on its price list to order: create a buyer and an item, or reset the sandbox';

const DAY = 86_400_000;
const NOTES = [null, null, 'Deliver to the loading dock', 'Call on arrival', 'Partial delivery accepted'];
const CHANNELS = ['edi', 'portal', 'email'];

const pick = <T>(random: () => number, values: readonly T[]) => values[Math.floor(random() * values.length)];

/**
 * A buyer's order of `variants`: a delivery 2 to 14 days out, a purchase-order number, quantities and
 * properties. It draws a quantity for each of the `lines` asked for, even where the list had fewer
 * variants: a seeded run then draws as many numbers an order whichever variants the database picked.
 */
export function simulatedOrder(now: string, variants: string[], lines: number, random: () => number): CreateOrderInput {
  const delivery = new Date(Math.floor(new Date(now).getTime() / DAY) * DAY + (2 + Math.floor(random() * 13)) * DAY);
  delivery.setUTCHours(7 + Math.floor(random() * 8));
  return {
    expectedDeliveryAt: delivery.toISOString(),
    externalReference: `PO-${100_000 + Math.floor(random() * 900_000)}`,
    notes: pick(random, NOTES),
    properties: { sandbox: { simulated: true, channel: pick(random, CHANNELS) } },
    orderItems: Array.from({ length: Math.max(lines, variants.length) }, () => 1 + Math.floor(random() * 24))
      .slice(0, variants.length)
      .map((quantity, i) => ({ itemVariantId: variants[i], quantity })),
  };
}

/** `count` orders now, each of a buyer at random (or the one named) from its price list (or the default list). */
export async function simulateOrders(
  ctx: WriteContext,
  input: SimulateOrdersInput,
  random: () => number = Math.random,
): Promise<Order[]> {
  const orders: Order[] = [];
  for (let n = 0; n < (input.count ?? 1); n++) {
    const buyer = await findSimulationBuyer(ctx.trx, ctx.businessId, input.buyerId);
    if (!buyer) throw input.buyerId === undefined ? conflict(NOTHING_TO_ORDER) : notFound(BUYER_NOT_FOUND);
    const lines = input.lines ?? 1 + Math.floor(random() * 5);
    let variants = await pickListVariants(ctx.trx, ctx.businessId, buyer.itemListId, lines);
    if (variants.length === 0 && buyer.itemListId !== null)
      variants = await pickListVariants(ctx.trx, ctx.businessId, null, lines);
    if (variants.length === 0) throw conflict(NOTHING_TO_ORDER);
    const partnership = { id: buyer.id, itemListId: buyer.itemListId };
    orders.push((await createOrder(ctx, partnership, simulatedOrder(ctx.now, variants, lines, random))).resource);
  }
  return orders;
}
