import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createQueryCounter } from '../helpers/queries.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';
import { findOrderRowWithItems } from '../../src/orders/repository.ts';
import { ingestOrder } from '../../src/orders/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';

const keyOf = (orderId: string, businessId: string) =>
  createHash('sha256').update(`${orderId}-${businessId}-order-integration`).digest('hex');

const ingest = (ctx: TestContext, as: Tenant, body: unknown, headers?: Record<string, string>) =>
  ctx.request('POST', '/api/v1/orders', { as, body, headers });

const ingestedAt = async (ctx: TestContext, id: string) =>
  (await ctx.db.selectFrom('orders').select('ingested_at').where('id', '=', id).executeTakeFirstOrThrow()).ingested_at;

// The app's clock stands still until a test moves it on, instead of waiting.
let now = Date.now();

describeEachBackend(
  'POST /api/v1/orders (ingestion)',
  (ctx) => {
    securityCases(ctx, {
      method: 'POST',
      url: () => '/api/v1/orders',
      body: { orderId: 'ord_x', businessId: 'bus_x' },
      crossTenant: false,
    });

    it('accepts a live order of the caller: 202 {success:true}, with or without the key, lower or upper case', async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const body = { orderId: order.id, businessId: t.businessId };
      const key = keyOf(order.id, t.businessId);
      for (const headers of [undefined, { 'idempotency-key': key }, { 'idempotency-key': key.toUpperCase() }]) {
        const res = await ingest(ctx(), t, body, headers);
        assert.equal(res.status, 202, JSON.stringify(res.body));
        assert.deepEqual(res.body, { success: true });
      }
    });

    it("records the first announcement's time; repeats change nothing", async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      assert.equal(await ingestedAt(ctx(), order.id), null);
      const body = { orderId: order.id, businessId: t.businessId };
      const headers = { 'idempotency-key': keyOf(order.id, t.businessId) };
      await ingest(ctx(), t, body, headers);
      const first = await ingestedAt(ctx(), order.id);
      assert.ok(first);
      now += 1000;
      await ingest(ctx(), t, body, headers);
      await ingest(ctx(), t, body);
      assert.equal(String(await ingestedAt(ctx(), order.id)), String(first));
      const after = (await getOrder(ctx(), t, order.id)).body;
      assert.deepEqual([after.version, after.updatedAt], [order.version, order.updatedAt]);
    });

    it('a malformed idempotency key gives 400 Invalid idempotency key format, with the recipe as its hint', async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const body = { orderId: order.id, businessId: t.businessId };
      for (const key of [
        'abc',
        keyOf('ord_other', t.businessId),
        keyOf(order.id, t.businessId).slice(1),
        createHash('sha256').update(`${order.id}-${t.businessId}`).digest('hex'),
      ]) {
        const res = await ingest(ctx(), t, body, { 'idempotency-key': key });
        assert.equal(res.status, 400, key);
        assert.equal(res.body.error, 'Invalid idempotency key format');
        assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
        // The contract's text, and what the key must be: a well-formed digest of the wrong text is the usual mistake.
        assert.match(res.body.hint, /SHA-256 of `\$\{orderId\}-\$\{businessId\}-order-integration`/, key);
      }
      assert.equal(await ingestedAt(ctx(), order.id), null);
    });

    it("a businessId other than the caller's gives 400", async () => {
      const t = await ctx().createTenant();
      const other = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const res = await ingest(ctx(), t, { orderId: order.id, businessId: other.businessId });
      assert.equal(res.status, 400);
      assert.ok(res.body.fieldErrors.businessId);
    });

    it('an unknown, deleted or foreign order gives 404 Order not found', async () => {
      const t = await ctx().createTenant();
      const other = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      const deleted = await createOrder(ctx(), t, f);
      await ctx().request('DELETE', `/api/v1/orders/${deleted.id}`, { as: t });
      const foreign = await createOrder(ctx(), other, await createFixture(ctx(), other));
      for (const id of ['ord_missing', deleted.id, foreign.id]) {
        const res = await ingest(
          ctx(),
          t,
          { orderId: id, businessId: t.businessId },
          { 'idempotency-key': keyOf(id, t.businessId) },
        );
        assert.deepEqual([res.status, res.body.error], [404, 'Order not found']);
      }
      assert.equal(await ingestedAt(ctx(), foreign.id), null);
    });

    it('validates the body: both fields required, unknown keys rejected', async () => {
      const t = await ctx().createTenant();
      const res = await ingest(ctx(), t, { orderId: 'ord_x', extra: 1 });
      assert.equal(res.status, 400);
      assert.equal(res.body.fieldErrors.businessId, 'Required');
      assert.equal(res.body.fieldErrors.extra, 'Unrecognized key');
    });

    it("a repeat reads the order's version and whether it was announced, not its row or items", async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const counter = await createQueryCounter(ctx(), t);
      try {
        const body = { orderId: order.id, businessId: t.businessId };
        const first = await counter.queriesOf('POST', '/api/v1/orders', body);
        assert.ok(
          first.some((q) => q.includes('order_items')),
          'the first announcement reads the items',
        );
        // Of the order's tables only: a background job's pass may fall inside the request on a busy machine.
        const ofOrder = (q: string) => /"name":"(orders|order_items)"| from (orders|order_items) /.test(q);
        const repeat = (await counter.queriesOf('POST', '/api/v1/orders', body)).filter(ofOrder);
        assert.equal(repeat.length, 1, repeat.join('\n'));
        assert.ok(!/SelectAllNode|select \*|order_items/.test(repeat[0]), repeat[0]);
      } finally {
        await counter.close();
      }
    });

    it('an order changed after it was read, before the write lock, is announced with the items it has under the lock', async () => {
      const t = await ctx().createTenant();
      const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
      const seen = await findOrderRowWithItems(ctx().db, t.businessId, order.id);
      const removed = order.orderItems[0].id;
      assert.equal((await patchOrder(ctx(), t, order.id, { deleteOrderItems: [removed] })).status, 200);
      let announced: any;
      const runner = createWriteRunner(ctx().db, {
        clock: () => now,
        onEvents: (_, events) => {
          announced = events[0].object;
        },
      });
      const first = await runner.run({ businessId: t.businessId, actor: SYSTEM }, (write) =>
        ingestOrder(write, order.id, seen),
      );
      assert.equal(first, true);
      assert.deepEqual(announced, (await getOrder(ctx(), t, order.id)).body);
      assert.ok(!announced.orderItems.some((i: { id: string }) => i.id === removed));
    });
  },
  { clock: () => now },
);
