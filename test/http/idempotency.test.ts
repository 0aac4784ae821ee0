import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { purgeExpiredIdempotencyKeys } from '../../src/write/idempotency-records.ts';
import { backends, createTestContext, describeEachBackend, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';

let now = Date.parse('2026-03-01T00:00:00.000Z');
const clock = () => now;
const body = (name = 'Widget') => ({ item: { name }, variants: [{ currency: 'AUD', price: 1 }] });

async function countItems(ctx: TestContext, businessId: string) {
  const row = await ctx.db
    .selectFrom('items')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', businessId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describeEachBackend(
  'Idempotency-Key',
  (ctx) => {
    it('replays the first response for a repeat, with Idempotent-Replayed: true', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'create-widget-1' };
      const first = await ctx().request('POST', '/api/v1/items', { as: t, body: body(), headers });
      const second = await ctx().request('POST', '/api/v1/items', { as: t, body: body(), headers });
      assert.equal(first.status, 201);
      assert.equal(first.headers['idempotent-replayed'], undefined);
      assert.equal(second.status, 201);
      assert.equal(second.headers['idempotent-replayed'], 'true');
      assert.deepEqual(second.body, first.body);
      assert.equal(await countItems(ctx(), t.businessId), 1);
      // Key order in the body does not change the fingerprint.
      const reordered = { variants: body().variants, item: body().item };
      assert.equal(
        (await ctx().request('POST', '/api/v1/items', { as: t, body: reordered, headers })).headers[
          'idempotent-replayed'
        ],
        'true',
      );
    });

    it('gives 422 when the key is reused for a different request', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'k-422' };
      await ctx().request('POST', '/api/v1/items', { as: t, body: body('A'), headers });
      const res = await ctx().request('POST', '/api/v1/items', { as: t, body: body('B'), headers });
      assert.equal(res.status, 422);
      assert.equal(res.body.errorCode, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(await countItems(ctx(), t.businessId), 1);
    });

    it('rejects a malformed key with 400, saying what a key is', async () => {
      const t = await ctx().createTenant();
      for (const key of ['x'.repeat(256), 'has space', 'ünïcode']) {
        const res = await ctx().request('POST', '/api/v1/items', {
          as: t,
          body: body(),
          headers: { 'idempotency-key': key },
        });
        assert.equal(res.status, 400, key);
        assert.equal(res.body.error, 'Invalid idempotency key format');
        assert.equal(
          res.body.hint,
          'An Idempotency-Key is 1 to 255 printable ASCII characters, without spaces: a UUID is a good one',
        );
      }
      assert.equal(await countItems(ctx(), t.businessId), 0);
    });

    it('does not store a 400, so the corrected retry runs', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'fix-and-retry' };
      const bad = await ctx().request('POST', '/api/v1/items', { as: t, body: { item: {}, variants: [] }, headers });
      assert.equal(bad.status, 400);
      const good = await ctx().request('POST', '/api/v1/items', { as: t, body: body(), headers });
      assert.equal(good.status, 201);
      assert.equal(good.headers['idempotent-replayed'], undefined);
    });

    it('does not store a 412, so the retry with the current ETag runs under the same key', async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const etag = (await getOrder(ctx(), t, order.id)).headers.etag as string;
      const body = { order: { notes: 'packed' } };
      const key = { 'idempotency-key': 'sync-order-notes' };
      const stale = await patchOrder(ctx(), t, order.id, body, { ...key, 'if-match': '"999"' });
      assert.equal(stale.status, 412);
      // As the guides say: fetch again, re-apply, send again with the same key.
      const retried = await patchOrder(ctx(), t, order.id, body, { ...key, 'if-match': etag });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.equal(retried.headers['idempotent-replayed'], undefined);
      assert.equal(retried.body.notes, 'packed');
      // The write is then what the key replays, whatever If-Match a repeat carries.
      const repeat = await patchOrder(ctx(), t, order.id, body, { ...key, 'if-match': etag });
      assert.equal(repeat.headers['idempotent-replayed'], 'true');
      assert.equal(repeat.body.version, retried.body.version);
    });

    it('stores other 4xx outcomes and replays them', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'patch-missing' };
      const first = await ctx().request('PATCH', '/api/v1/items/itm_missing', { as: t, body: { name: 'x' }, headers });
      assert.equal(first.status, 404);
      const again = await ctx().request('PATCH', '/api/v1/items/itm_missing', { as: t, body: { name: 'x' }, headers });
      assert.equal(again.status, 404);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.body.requestId, again.headers['x-request-id']);
      assert.equal(again.body.message, first.body.message);
    });

    it('scopes keys by business', async () => {
      const a = await ctx().createTenant();
      const b = await ctx().createTenant();
      const headers = { 'idempotency-key': 'shared-key' };
      const ra = await ctx().request('POST', '/api/v1/items', { as: a, body: body(), headers });
      const rb = await ctx().request('POST', '/api/v1/items', { as: b, body: body(), headers });
      assert.equal(rb.status, 201);
      assert.equal(rb.headers['idempotent-replayed'], undefined);
      assert.notEqual(ra.body.id, rb.body.id);
    });

    it('forgets keys after the TTL (24 h), and purges expired records', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'ttl-key' };
      await ctx().request('POST', '/api/v1/items', { as: t, body: body('A'), headers });
      now += 23 * 3_600_000;
      assert.equal((await ctx().request('POST', '/api/v1/items', { as: t, body: body('B'), headers })).status, 422);
      now += 2 * 3_600_000;
      const later = await ctx().request('POST', '/api/v1/items', { as: t, body: body('B'), headers });
      assert.equal(later.status, 201);
      assert.equal(await countItems(ctx(), t.businessId), 2);
      const other = await ctx().request('POST', '/api/v1/items', {
        as: t,
        body: body('C'),
        headers: { 'idempotency-key': 'old' },
      });
      assert.equal(other.status, 201);
      const purged = await purgeExpiredIdempotencyKeys(ctx().db, new Date(now + 25 * 3_600_000));
      assert.ok(purged >= 2);
      const left = await ctx()
        .db.selectFrom('idempotency_keys')
        .select('key')
        .where('business_id', '=', t.businessId)
        .execute();
      assert.deepEqual(left, []);
    });

    it('creates exactly one item from 20 concurrent identical requests', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'burst-20' };
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => ctx().request('POST', '/api/v1/items', { as: t, body: body(), headers })),
      );
      assert.equal(await countItems(ctx(), t.businessId), 1);
      const created = responses.filter((r) => r.status === 201);
      assert.ok(created.length >= 1);
      assert.equal(created.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
      assert.ok(new Set(created.map((r) => r.body.id)).size === 1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        assert.equal(r.status, 409);
        assert.equal(r.body.errorCode, 'IDEMPOTENCY_KEY_IN_USE');
      }
    });
  },
  { clock },
);

for (const backend of backends) {
  describe(`[${backend}] Idempotency-Key across instances`, () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestContext(backend);
    });
    after(async () => {
      await ctx.close();
    });

    it('creates exactly one item when two instances race on one key', async () => {
      const second = await createApp({ db: ctx.db, config: loadConfig({ RATE_LIMIT_RPS: '0' }), rateLimiter: null });
      const t = await ctx.createTenant();
      const payload = JSON.stringify(body());
      const headers = { ...t.headers, 'content-type': 'application/json', 'idempotency-key': 'two-instances' };
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? ctx.app : second).inject({ method: 'POST', url: '/api/v1/items', headers, payload }),
        ),
      );
      await second.close();
      assert.equal(await countItems(ctx, t.businessId), 1);
      const ids = new Set(responses.filter((r) => r.statusCode === 201).map((r) => r.json().id));
      assert.equal(ids.size, 1);
      assert.ok(responses.every((r) => r.statusCode === 201 || r.statusCode === 409));
    });
  });
}

describeEachBackend('Idempotency-Key fingerprint', (ctx) => {
  it('treats a trailing slash as the same request', async () => {
    const t = await ctx().createTenant();
    const headers = { 'idempotency-key': 'slash' };
    await ctx().request('POST', '/api/v1/items', { as: t, body: body(), headers });
    const again = await ctx().request('POST', '/api/v1/items/', { as: t, body: body(), headers });
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
  });
});

describeEachBackend('Idempotency-Key where the contract takes none', (ctx) => {
  it('is ignored by a DELETE, whose repeat is a 404, and by order ingestion, whose repeat changes nothing', async () => {
    const t = await ctx().createTenant();
    const item = await ctx().request('POST', '/api/v1/items', { as: t, body: body() });
    const headers = { 'idempotency-key': 'delete-1' };
    const first = await ctx().request('DELETE', `/api/v1/items/${item.body.id}`, { as: t, headers });
    assert.equal(first.status, 204);
    const again = await ctx().request('DELETE', `/api/v1/items/${item.body.id}`, { as: t, headers });
    assert.equal(again.status, 404);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    // A key in no valid format is not looked at either.
    const odd = await ctx().request('DELETE', `/api/v1/items/${item.body.id}`, {
      as: t,
      headers: { 'idempotency-key': ' ' },
    });
    assert.equal(odd.status, 404);
  });
});
