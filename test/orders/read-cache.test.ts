import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApp, type App } from '../../src/app.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { ENTRY_OVERHEAD, RenderCache } from '../../src/lib/render-cache.ts';
import { checkResponsesOf, describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';
import { createQueryCounter } from '../helpers/queries.ts';

describe('RenderCache', () => {
  it('serves an entry only for the stamp it was stored with', () => {
    const cache = new RenderCache(10_000);
    const b = (text: string) => Buffer.from(text);
    cache.set('a', '1/0', b('{"v":1}'));
    assert.equal(cache.get('a', '1/0')?.toString(), '{"v":1}');
    assert.equal(cache.get('a', '2/0'), undefined);
    assert.equal(cache.get('a', '1/1'), undefined);
    cache.set('a', '2/0', b('{"v":2}'));
    assert.equal(cache.get('a', '1/0'), undefined);
    assert.equal(cache.get('a', '2/0')?.toString(), '{"v":2}');
    assert.equal(cache.size, '{"v":2}'.length + 'a'.length + ENTRY_OVERHEAD);
  });

  it('stays within its size, dropping the least recently used first, and skips entries over an eighth of it', () => {
    const entry = 10 + 1 + ENTRY_OVERHEAD;
    const cache = new RenderCache(8 * entry);
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, 's', Buffer.from(key.repeat(10)));
    assert.equal(cache.size, 4 * entry);
    assert.ok(cache.get('a', 's'), 'a is now the most recently used');
    for (const key of ['e', 'f', 'g', 'h', 'i']) cache.set(key, 's', Buffer.from(key.repeat(10)));
    assert.ok(cache.size <= 8 * entry);
    assert.equal(cache.get('b', 's'), undefined, 'b was the least recently used');
    assert.ok(cache.get('a', 's'));
    cache.set('big', 's', Buffer.from('x'.repeat(11)));
    assert.equal(cache.get('big', 's'), undefined);
    assert.ok(cache.size <= 8 * entry);
  });

  it('keeps only the bytes it counts: a slice of a larger buffer is copied out of it', () => {
    const cache = new RenderCache(10_000);
    const slab = Buffer.from('{"v":1}{"v":2}');
    assert.ok(slab.buffer.byteLength > slab.length, 'a short text is a slice of a shared slab');
    cache.set('a', '1', slab.subarray(7));
    const held = cache.get('a', '1')!;
    assert.equal(held.toString(), '{"v":2}');
    assert.equal(held.buffer.byteLength, held.length);
    const whole = Buffer.allocUnsafeSlow(2).fill('{}');
    cache.set('b', '1', whole);
    assert.equal(cache.get('b', '1'), whole, 'an allocation of its own is kept as it is');
  });

  it('holds nothing when given no memory', () => {
    const cache = new RenderCache(0);
    cache.set('a', 's', Buffer.from('{}'));
    assert.equal(cache.get('a', 's'), undefined);
    assert.equal(cache.enabled, false);
  });
});

async function openSecondInstance(ctx: TestContext): Promise<{ app: App; close(): Promise<void> }> {
  const handle = createDatabase(ctx.database.url, { schema: ctx.database.schema });
  const app = await createApp({ db: handle.db, config: ctx.config, rateLimiter: null });
  await app.ready();
  checkResponsesOf(app);
  return {
    app,
    close: async () => {
      await app.close();
      await handle.close();
    },
  };
}

async function inject(app: App, as: Tenant, method: 'GET' | 'PATCH', url: string, body?: object) {
  const headers = body === undefined ? as.headers : { ...as.headers, 'content-type': 'application/json' };
  const res = await app.inject({
    method,
    url,
    headers,
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json(), text: res.body };
}

describeEachBackend('Rendered orders (GET /api/v1/orders/:id and lists)', (ctx) => {
  it('answers a repeated GET from the cache with one query, and byte for byte as without it', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f, { properties: { a: { b: 1 } } });
    const cached = await createQueryCounter(ctx(), t, { responseCacheMb: 8 });
    const uncached = await createQueryCounter(ctx(), t, { responseCacheMb: 0 });
    try {
      const hit = await cached.measure(`/api/v1/orders/${order.id}`);
      const miss = await uncached.measure(`/api/v1/orders/${order.id}`);
      assert.equal(hit.n, 1, 'the stamp query only');
      assert.ok(!hit.reads('order_items') && miss.reads('order_items'));
      assert.ok(miss.n >= 2, `${miss.n} queries without the cache`);
      assert.equal(JSON.stringify(hit.body), JSON.stringify(miss.body));
      assert.deepEqual(hit.body, (await getOrder(ctx(), t, order.id)).body);

      const listHit = await cached.measure('/api/v1/orders?limit=100');
      const listMiss = await uncached.measure('/api/v1/orders?limit=100');
      assert.equal(JSON.stringify(listHit.body), JSON.stringify(listMiss.body));
      assert.ok(listMiss.reads('order_items') && !listHit.reads('order_items'), 'a cached page does not load items');
    } finally {
      await cached.close();
      await uncached.close();
    }
  });

  it('shows every change to the order and its items at once, in GET and in lists', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const list = async () =>
      (await ctx().request('GET', '/api/v1/orders', { as: t })).body.items.find((o: any) => o.id === order.id);
    await getOrder(ctx(), t, order.id);
    await list();

    const patched = await patchOrder(ctx(), t, order.id, {
      order: { notes: 'leave at the back', properties: { erp: { id: 7 } } },
      updateOrderItems: [{ id: order.orderItems[0].id, quantity: 5 }],
    });
    assert.equal(patched.status, 200);
    for (const seen of [(await getOrder(ctx(), t, order.id)).body, await list()]) {
      assert.equal(seen.notes, 'leave at the back');
      assert.deepEqual(seen.properties, { erp: { id: 7 } });
      assert.equal(seen.orderItems[0].quantity, 5);
      assert.equal(seen.version, 2);
    }
    assert.equal((await getOrder(ctx(), t, order.id)).headers.etag, '"2"');

    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${order.id}`, { as: t })).status, 204);
    assert.equal((await getOrder(ctx(), t, order.id)).status, 404);
    assert.equal(await list(), undefined);
  });

  it('shows a change made through another instance on the same database', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const other = await openSecondInstance(ctx());
    try {
      assert.equal((await getOrder(ctx(), t, order.id)).body.version, 1);
      assert.equal((await ctx().request('GET', '/api/v1/orders', { as: t })).body.items[0].version, 1);
      const patched = await inject(other.app, t, 'PATCH', `/api/v1/orders/${order.id}`, {
        order: { status: 'ACCEPTED' },
      });
      assert.equal(patched.status, 200, patched.text);

      const seen = await getOrder(ctx(), t, order.id);
      assert.equal(seen.body.status, 'ACCEPTED');
      assert.equal(seen.headers.etag, '"2"');
      assert.equal((await ctx().request('GET', '/api/v1/orders', { as: t })).body.items[0].status, 'ACCEPTED');
    } finally {
      await other.close();
    }
  });

  it("never serves one business's cached order to another", async () => {
    const owner = await ctx().createTenant();
    const stranger = await ctx().createTenant('Other Supplier');
    const order = await createOrder(ctx(), owner, await createFixture(ctx(), owner));
    assert.equal((await getOrder(ctx(), owner, order.id)).status, 200);
    const res = await getOrder(ctx(), stranger, order.id);
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'Order not found');
    assert.equal((await ctx().request('GET', '/api/v1/orders', { as: stranger })).body.total, 0);
  });
});
