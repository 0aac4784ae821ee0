import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { createSandbox, type SandboxSettings } from '../../src/sandbox/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import type { Tenant, TestContext } from '../helpers/context.ts';
import { createFixture, type OrderFixture } from '../helpers/orders.ts';

/** Shared by the app and the sandbox copies, so that a copied webhook endpoint's secret opens. */
export const SECRET_KEY = randomBytes(32);

export function sandboxSettings(ctx: TestContext, more: Partial<SandboxSettings> = {}): SandboxSettings {
  return {
    writes: createWriteRunner(ctx.db),
    actor: SYSTEM,
    box: new SecretBox([SECRET_KEY]),
    maxSandboxes: 10,
    batchSize: 2,
    ...more,
  };
}

export const asTenant = (businessId: string, apiKey: string): Tenant => ({
  businessId,
  apiKey,
  keyId: '',
  headers: { 'x-business-id': businessId, 'x-api-key': apiKey },
});

/** A live business with some of everything a sandbox copies, and an order it must not. */
export async function liveBusinessWithConfiguration(
  ctx: TestContext,
): Promise<{ live: Tenant; fixture: OrderFixture }> {
  const live = await ctx.createTenant('Live Supplier');
  const fixture = await createFixture(ctx, live);
  const buyer = await ctx.request('POST', '/api/v1/buyers', {
    as: live,
    body: {
      buyer: { name: 'Contacts Co', legalName: 'Contacts Co Pty Ltd' },
      emails: [{ email: 'orders@contacts.example', isPrimary: true }],
      phones: [{ phone: '+61 2 9999 0000' }],
      locations: [{ addressLine1: '1 Main St', city: 'Sydney', country: 'AU' }],
    },
  });
  assert.equal(buyer.status, 201, JSON.stringify(buyer.body));
  const list = await ctx.request('POST', '/api/v1/pricing', {
    as: live,
    body: {
      itemListData: { label: 'VIP' },
      entries: [{ itemVariantId: fixture.variantIds[0], overrideFlatPrice: 7, currency: 'AUD' }],
      partnerships: [buyer.body.partnershipId],
    },
  });
  assert.equal(list.status, 201, JSON.stringify(list.body));
  const gone = await ctx.request('POST', '/api/v1/items', {
    as: live,
    body: { item: { name: 'Discontinued' }, variants: [{ variantName: 'Only', currency: 'AUD', price: 1 }] },
  });
  assert.equal((await ctx.request('DELETE', `/api/v1/items/${gone.body.id}`, { as: live })).status, 204);
  const hook = await ctx.request('POST', '/api/v1/webhook-endpoints', {
    as: live,
    body: { url: 'https://hooks.example/supplyline' },
  });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const order = await ctx.request('POST', `/api/v1/buyers/${fixture.buyerId}/orders`, {
    as: live,
    body: {
      expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
      orderItems: [{ itemVariantId: fixture.variantIds[0], quantity: 2 }],
    },
  });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  return { live, fixture };
}

export async function newSandbox(ctx: TestContext, live: Tenant, more: Partial<SandboxSettings> = {}) {
  const created = await createSandbox(ctx.db, live.businessId, undefined, sandboxSettings(ctx, more));
  return { ...created, tenant: asTenant(created.sandbox.id, created.apiKey) };
}

const ID = /^(bus|key|itm|var|list|ile|prt|phm|eml|phn|loc|we|ord|oi|evt)_[0-9a-z]{26}$/;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** A value with its ids numbered by first appearance and its times left out, so two copies compare equal. */
export function withoutIdsAndTimes(value: unknown, ids = new Map<string, string>()): unknown {
  if (typeof value === 'string') {
    if (ID.test(value)) {
      if (!ids.has(value)) ids.set(value, `${value.split('_')[0]}#${ids.size}`);
      return ids.get(value);
    }
    return TIME.test(value) ? '<time>' : value;
  }
  if (Array.isArray(value)) return value.map((v) => withoutIdsAndTimes(v, ids));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutIdsAndTimes(v, ids)]));
  return value;
}
