import assert from 'node:assert/strict';
import type { Tenant, TestContext } from './context.ts';

/** A catalogue and a buyer to order with: variants priced 10, 2.5 and 0.1 (AUD), and their default-list entries. */
export interface OrderFixture {
  buyerId: string;
  partnershipId: string;
  variantIds: string[];
  entryIds: string[];
}

export async function createFixture(ctx: TestContext, as: Tenant, variants?: Array<Record<string, unknown>>): Promise<OrderFixture> {
  const item = await ctx.request('POST', '/api/v1/items', {
    as,
    body: {
      item: { name: `Widget ${Math.random()}` },
      variants: variants ?? [
        { variantName: 'Small', sku: 'W-S', currency: 'AUD', price: 10, cost: 4, unitOfMeasure: 'kg' },
        { variantName: 'Large', currency: 'AUD', price: 2.5 },
        { variantName: 'Tiny', currency: 'AUD', price: 0.1, cost: 0.05 },
      ],
    },
  });
  assert.equal(item.status, 201, JSON.stringify(item.body));
  const buyer = await ctx.request('POST', '/api/v1/buyers', { as, body: { buyer: { name: 'Acme Foods' } } });
  assert.equal(buyer.status, 201, JSON.stringify(buyer.body));
  const variantIds: string[] = item.body.variantIds;
  const rows = await ctx.db.selectFrom('item_list_entries').select(['id', 'item_variant_id'])
    .where('business_id', '=', as.businessId).where('item_variant_id', 'in', variantIds).execute();
  const entryIds = variantIds.map((v) => rows.find((r) => r.item_variant_id === v)!.id);
  return { buyerId: buyer.body.id, partnershipId: buyer.body.partnershipId, variantIds, entryIds };
}

export const DELIVERY = '2030-01-15T10:30:00.000Z';

export function postOrder(ctx: TestContext, as: Tenant, f: OrderFixture, body: Record<string, unknown> = {}, headers?: Record<string, string>) {
  return ctx.request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
    as, headers, body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 2 }], ...body },
  });
}

/** Creates an order and returns its body; fails the test when creation does not give 201. */
export async function createOrder(ctx: TestContext, as: Tenant, f: OrderFixture, body: Record<string, unknown> = {}) {
  const res = await postOrder(ctx, as, f, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

export const patchOrder = (ctx: TestContext, as: Tenant, id: string, body: unknown, headers?: Record<string, string>) =>
  ctx.request('PATCH', `/api/v1/orders/${id}`, { as, body, headers });

export const getOrder = (ctx: TestContext, as: Tenant, id: string) => ctx.request('GET', `/api/v1/orders/${id}`, { as });

export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
