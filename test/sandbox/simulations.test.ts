import assert from 'node:assert/strict';
import { it } from 'node:test';
import { NOT_A_SANDBOX, NOTHING_TO_ORDER } from '../../src/sandbox/simulation.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { liveBusinessWithConfiguration, SECRET_KEY } from './helpers.ts';

const URL = '/api/v1/sandbox/simulations/orders';
const simulate = (ctx: TestContext, as: Tenant, body: unknown = {}) => ctx.request('POST', URL, { as, body });

async function sandboxWithBuyers(ctx: TestContext) {
  const { live } = await liveBusinessWithConfiguration(ctx);
  const sandbox = await ctx.createSandbox(live);
  const buyers = (await ctx.request('GET', '/api/v1/buyers?limit=100', { as: sandbox })).body.items;
  const lists = (await ctx.request('GET', '/api/v1/pricing', { as: sandbox })).body.items;
  return { live, sandbox, buyers, lists };
}

describeEachBackend(
  'POST /api/v1/sandbox/simulations/orders',
  (ctx) => {
    securityCases(ctx, {
      method: 'POST',
      url: () => '/api/v1/sandbox/simulations/orders',
      body: {},
      crossTenant: false,
    });

    it("makes a realistic order of a buyer of the sandbox, from that buyer's price list, announced as livemode false", async () => {
      const { live, sandbox, buyers, lists } = await sandboxWithBuyers(ctx());
      const res = await simulate(ctx(), sandbox);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.headers['supplyline-sandbox'], 'true');
      const [order] = res.body.orders;
      assert.equal(res.body.orders.length, 1);
      assert.ok(buyers.some((b: { partnershipId: string }) => b.partnershipId === order.partnershipId));
      assert.equal(order.properties.sandbox.simulated, true);
      assert.match(order.externalReference, /^PO-\d{6}$/);
      const days = (new Date(order.expectedDeliveryAt).getTime() - Date.now()) / 86_400_000;
      assert.ok(days > 0.5 && days < 15, order.expectedDeliveryAt);
      assert.ok(order.orderItems.length >= 1 && order.orderItems.length <= 5);
      // The VIP buyer orders only what its list holds, at the list's price.
      const vip = lists.find((l: { label: string }) => l.label === 'VIP');
      const vipBuyer = buyers.find((b: { partnershipId: string }) => vip.partnershipIds.includes(b.partnershipId));
      const fromVip = await simulate(ctx(), sandbox, { buyerId: vipBuyer.id, lines: 3, count: 2 });
      assert.equal(fromVip.status, 201, JSON.stringify(fromVip.body));
      for (const o of fromVip.body.orders) {
        assert.deepEqual(
          o.orderItems.map((i: { itemListEntry: { itemVariantId: string }; price: string }) => [
            i.itemListEntry.itemVariantId,
            Number(i.price),
          ]),
          [[vip.entries[0].itemVariantId, 7]],
        );
      }
      const feed = await ctx().request('GET', '/api/v1/events?limit=1000', { as: sandbox });
      const created = feed.body.items.filter((e: { type: string }) => e.type === 'order.created');
      assert.equal(created.length, 3);
      assert.ok(created.every((e: { livemode: boolean }) => e.livemode === false));
      const liveFeed = await ctx().request('GET', '/api/v1/events?limit=1000', { as: live });
      assert.ok(!JSON.stringify(liveFeed.body).includes(order.id));
    });

    it('takes lines and count (at most 100) for a named buyer', async () => {
      const { sandbox, buyers } = await sandboxWithBuyers(ctx());
      const plain = buyers.find((b: { name: string }) => b.name === 'Acme Foods');
      const res = await simulate(ctx(), sandbox, { buyerId: plain.id, lines: 2, count: 4 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.orders.length, 4);
      for (const o of res.body.orders) {
        assert.equal(o.partnershipId, plain.partnershipId);
        assert.equal(o.orderItems.length, 2, JSON.stringify(o.orderItems));
        assert.equal(new Set(o.orderItems.map((i: { itemListEntryId: string }) => i.itemListEntryId)).size, 2);
      }
      for (const [body, field] of [
        [{ count: 101 }, 'count'],
        [{ count: 0 }, 'count'],
        [{ lines: 21 }, 'lines'],
        [{ lines: 1.5 }, 'lines'],
        [{ buyerId: '' }, 'buyerId'],
      ] as const) {
        const refused = await simulate(ctx(), sandbox, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.ok(refused.body.fieldErrors?.[field], JSON.stringify(refused.body));
      }
      assert.equal((await simulate(ctx(), sandbox, { orders: 1 })).status, 400);
    });

    it("is a 403 on a live business, a 404 for another business's buyer, a 409 for a sandbox with nothing to order", async () => {
      const { live, sandbox } = await sandboxWithBuyers(ctx());
      const refused = await simulate(ctx(), live);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.errorCode, 'FORBIDDEN');
      assert.equal(refused.body.message, NOT_A_SANDBOX);
      assert.equal((await ctx().request('GET', '/api/v1/orders', { as: live })).body.items.length, 1);

      const liveBuyers = (await ctx().request('GET', '/api/v1/buyers', { as: live })).body.items;
      const foreign = await simulate(ctx(), sandbox, { buyerId: liveBuyers[0].id });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.message, 'Buyer not found');

      const empty = await ctx().createSandbox(await ctx().createTenant());
      const nothing = await simulate(ctx(), empty);
      assert.equal(nothing.status, 409);
      assert.equal(nothing.body.message, NOTHING_TO_ORDER);
    });

    it('needs orders:write', async () => {
      const { sandbox } = await sandboxWithBuyers(ctx());
      const reader = await ctx().addKey(sandbox, ['orders:read']);
      const res = await simulate(ctx(), reader);
      assert.equal(res.status, 403);
      assert.match(res.body.message, /lacks the scope orders:write/);
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);
