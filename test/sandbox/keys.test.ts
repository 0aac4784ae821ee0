import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { LIVE_KEY_ON_SANDBOX_HINT, TEST_KEY_ON_LIVE_HINT, UNAUTHORIZED_HINT } from '../../src/lib/errors.ts';
import { listEvents } from '../../src/events/repository.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { assertUnauthorized } from '../helpers/security.ts';
import { SECRET_KEY } from './helpers.ts';

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached: ${JSON.stringify(value).slice(0, 1000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const createItem = (ctx: TestContext, as: Tenant, name: string) =>
  ctx.request('POST', '/api/v1/items', {
    as,
    body: { item: { name }, variants: [{ variantName: 'One', currency: 'AUD', price: 1 }] },
  });

describeEachBackend(
  'test keys',
  (ctx) => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => receiver.close());

    it('work on their sandbox only, and every answer to one says Supplyline-Sandbox: true', async () => {
      const live = await ctx().createTenant();
      const sandbox = await ctx().createSandbox(live);
      assert.match(sandbox.apiKey, /^sl_test_/);
      for (const [method, url, body, status] of [
        ['GET', '/api/v1/items', undefined, 200],
        ['POST', '/api/v1/items', { item: {} }, 400],
        ['GET', '/api/v1/items/itm_00000000000000000000000000', undefined, 404],
      ] as const) {
        const asSandbox = await ctx().request(method, url, { as: sandbox, body });
        assert.equal(asSandbox.status, status, `${method} ${url}`);
        assert.equal(asSandbox.headers['supplyline-sandbox'], 'true');
        const asLive = await ctx().request(method, url, { as: live, body });
        assert.equal(asLive.status, status);
        assert.equal(asLive.headers['supplyline-sandbox'], undefined);
      }
      // Keys made later for the sandbox are test keys too; for the live business, live keys.
      assert.match((await ctx().addKey(sandbox)).apiKey, /^sl_test_/);
      assert.match((await ctx().addKey(live)).apiKey, /^sl_live_/);
    });

    it("a sandbox's test key on its live business, or that business's live key on the sandbox, is a 401 whose hint says which; a stranger is told nothing", async () => {
      const live = await ctx().createTenant();
      const sandbox = await ctx().createSandbox(live);
      const other = await ctx().createTenant();
      const otherSandbox = await ctx().createSandbox(other);
      const ask = (businessId: string, apiKey: string) =>
        ctx().request('GET', '/api/v1/items', { headers: { 'x-business-id': businessId, 'x-api-key': apiKey } });
      assertUnauthorized(await ask(live.businessId, sandbox.apiKey), TEST_KEY_ON_LIVE_HINT);
      assertUnauthorized(await ask(sandbox.businessId, live.apiKey), LIVE_KEY_ON_SANDBOX_HINT);
      // Another business's key learns nothing of a business: whether it is, nor whether it is live (DESIGN.md: one 401 body).
      assertUnauthorized(await ask(other.businessId, sandbox.apiKey), UNAUTHORIZED_HINT);
      assertUnauthorized(await ask(otherSandbox.businessId, live.apiKey), UNAUTHORIZED_HINT);
      // Same mode, wrong business, or no such business: the usual hint.
      assertUnauthorized(await ask(otherSandbox.businessId, sandbox.apiKey), UNAUTHORIZED_HINT);
      assertUnauthorized(await ask('bus_00000000000000000000000000', sandbox.apiKey), UNAUTHORIZED_HINT);
      assertUnauthorized(await ask('', sandbox.apiKey), UNAUTHORIZED_HINT);
      // A well-formed test key that is no key at all: nothing about the business.
      const made = `sl_test_${live.apiKey.slice(8)}`;
      assertUnauthorized(await ask(live.businessId, made), UNAUTHORIZED_HINT);
      // A revoked test key is no key either.
      const spare = await ctx().addKey(sandbox);
      await ctx().revokeKey(sandbox, spare.keyId);
      assertUnauthorized(await ask(live.businessId, spare.apiKey), UNAUTHORIZED_HINT);
    });

    it('events say "livemode": false in a sandbox and true in a live business, in the feed and in webhook deliveries', async () => {
      const live = await ctx().createTenant();
      const sandbox = await ctx().createSandbox(live);
      for (const t of [live, sandbox]) {
        const hook = await ctx().request('POST', '/api/v1/webhook-endpoints', { as: t, body: { url: receiver.url } });
        assert.equal(hook.status, 201, JSON.stringify(hook.body));
        assert.equal((await createItem(ctx(), t, `Widget of ${t.businessId}`)).status, 201);
      }
      for (const [t, livemode] of [
        [live, true],
        [sandbox, false],
      ] as const) {
        const feed = await ctx().request('GET', '/api/v1/events', { as: t });
        assert.equal(feed.status, 200);
        assert.ok(feed.body.items.length > 0);
        for (const event of feed.body.items) {
          assert.equal(event.livemode, livemode, JSON.stringify(event));
          // The contract's fields in their order, livemode before data.
          assert.deepEqual(Object.keys(event).slice(-2), ['livemode', 'data']);
        }
        const page = await listEvents(ctx().db, t.businessId, { after: 0, limit: 100 });
        assert.ok(page.items.every((e) => e.livemode === livemode));
        const received = await eventually(
          async () => receiver.received.filter((r) => r.event.data?.object?.name === `Widget of ${t.businessId}`),
          (found) => found.length > 0,
        );
        assert.equal(received[0].event.livemode, livemode);
      }
      // The sandbox's item is nowhere in the live business's feed.
      const liveFeed = await ctx().request('GET', '/api/v1/events', { as: live });
      assert.ok(!JSON.stringify(liveFeed.body).includes(sandbox.businessId));
      assert.ok(!JSON.stringify(liveFeed.body).includes(`Widget of ${sandbox.businessId}`));
    });
  },
  {
    config: {
      secretKeys: [SECRET_KEY],
      webhooks: { ...loadConfig({}).webhooks, allowPrivateNetworks: true, retrySchedule: [0, 1], timeoutMs: 1500 },
    },
  },
);
