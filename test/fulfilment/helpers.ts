import assert from 'node:assert/strict';
import type { Tenant, TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

/** An order of three lines: 50, 10 and 4 units. */
export async function orderOfThree(ctx: TestContext, as: Tenant) {
  const f = await createFixture(ctx, as);
  const order = await createOrder(ctx, as, f, {
    orderItems: [
      { itemVariantId: f.variantIds[0], quantity: 50 },
      { itemVariantId: f.variantIds[1], quantity: 10 },
      { itemVariantId: f.variantIds[2], quantity: 4 },
    ],
  });
  const [a, b, c] = order.orderItems.map((i: { id: string }) => i.id) as string[];
  return { f, order, lines: { a, b, c } };
}

export const acknowledge = (ctx: TestContext, as: Tenant, orderId: string, body: unknown) =>
  ctx.request('POST', `/api/v1/orders/${orderId}/acknowledgements`, { as, body });

export const ship = (ctx: TestContext, as: Tenant, orderId: string, body: unknown) =>
  ctx.request('POST', `/api/v1/orders/${orderId}/shipments`, { as, body });

export async function shipOk(ctx: TestContext, as: Tenant, orderId: string, body: unknown) {
  const res = await ship(ctx, as, orderId, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** An SSCC with a valid check digit, from 17 digits. */
export function sscc(serial: number): string {
  const body = `0001234560${String(serial).padStart(7, '0')}`;
  let total = 0;
  for (let i = 0; i < 17; i++) total += Number(body[i]) * (i % 2 === 0 ? 3 : 1);
  return `${body}${(10 - (total % 10)) % 10}`;
}
