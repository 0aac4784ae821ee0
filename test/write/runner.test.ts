import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApp } from '../../src/app.ts';
import { ApiError } from '../../src/lib/errors.ts';
import { createWriteRunner, SYSTEM, type WriteContext } from '../../src/write/runner.ts';
import { backends, createTestContext, describeEachBackend, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

const CLOCK = Date.parse('2031-05-06T07:08:09.010Z');

describeEachBackend('the write runner', (ctx) => {
  it('hands every write its context: the business, the API key, the request id, the Idempotency-Key and the injected clock', async () => {
    const t = await ctx().createTenant();
    const seen: WriteContext[] = [];
    const runner = createWriteRunner(ctx().db, { clock: () => CLOCK });
    const spy = {
      run: <T>(scope: Parameters<typeof runner.run>[0], work: (c: WriteContext) => Promise<T>) =>
        runner.run(scope, (c) => {
          seen.push(c);
          return work(c);
        }),
      runIdempotent: (
        scope: Parameters<typeof runner.runIdempotent>[0],
        key: Parameters<typeof runner.runIdempotent>[1],
        work: Parameters<typeof runner.runIdempotent>[2],
      ) =>
        runner.runIdempotent(scope, key, (c) => {
          seen.push(c);
          return work(c);
        }),
    };
    const app = await createApp({
      db: ctx().db,
      config: ctx().config,
      rateLimiter: null,
      clock: () => CLOCK,
      writes: spy,
    });
    try {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/items',
        headers: { ...t.headers, 'x-request-id': 'req-runner-1', 'idempotency-key': 'k-1' },
        payload: { item: { name: 'Clocked' }, variants: [{ currency: 'AUD', price: 1 }] },
      });
      assert.equal(created.statusCode, 201, created.body);
      const item = await app.inject({ method: 'GET', url: `/api/v1/items/${created.json().id}`, headers: t.headers });
      // Every timestamp the write stored is the injected clock's, not the machine's.
      assert.equal(item.json().createdAt, new Date(CLOCK).toISOString());
      assert.equal(item.json().variants[0].createdAt, new Date(CLOCK).toISOString());

      const deleted = await app.inject({
        method: 'DELETE',
        url: `/api/v1/items/${created.json().id}`,
        headers: { ...t.headers, 'x-request-id': 'req-runner-2' },
      });
      assert.equal(deleted.statusCode, 204);
    } finally {
      await app.close();
    }
    assert.equal(seen.length, 2);
    assert.equal(seen[0].businessId, t.businessId);
    assert.deepEqual(seen[0].actor, { type: 'api_key', id: t.keyId, name: null });
    assert.equal(seen[0].requestId, 'req-runner-1');
    assert.equal(seen[0].idempotencyKey, 'k-1');
    assert.equal(seen[0].now, new Date(CLOCK).toISOString());
    assert.equal(seen[1].requestId, 'req-runner-2');
    assert.equal(seen[1].idempotencyKey, null);
  });

  it('commits what the work wrote, and rolls all of it back when the work fails', async () => {
    const t = await ctx().createTenant();
    const runner = createWriteRunner(ctx().db);
    const counter = () =>
      ctx()
        .db.selectFrom('business_counters')
        .select('value')
        .where('business_id', '=', t.businessId)
        .where('name', '=', 'runner-test')
        .executeTakeFirst();
    const write = (value: number) => (c: WriteContext) =>
      c.trx.insertInto('business_counters').values({ business_id: c.businessId, name: 'runner-test', value }).execute();

    await assert.rejects(
      runner.run({ businessId: t.businessId, actor: SYSTEM }, async (c) => {
        await write(1)(c);
        throw new ApiError('CONFLICT', 'no');
      }),
      /no/,
    );
    assert.equal(await counter(), undefined);
    await runner.run({ businessId: t.businessId, actor: SYSTEM }, write(2));
    assert.equal(Number((await counter())?.value), 2);
  });

  it("gives each write of a business a time later than the last one's, whatever the clock says", async () => {
    const t = await ctx().createTenant();
    let now = CLOCK;
    const runner = createWriteRunner(ctx().db, { clock: () => now });
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const times: string[] = [];
    const take = () =>
      runner.run(scope, async (c) => {
        times.push(c.now);
      });
    await take();
    await take();
    now = CLOCK - 60_000;
    await take();
    now = CLOCK + 5_000;
    await take();
    assert.deepEqual(
      times,
      [CLOCK, CLOCK + 1, CLOCK + 2, CLOCK + 5_000].map((ms) => new Date(ms).toISOString()),
    );
    // A write that rolls back gives its time back with everything else it did.
    await assert.rejects(
      runner.run(scope, async (c) => {
        times.push(c.now);
        throw new ApiError('CONFLICT', 'no');
      }),
      /no/,
    );
    await take();
    assert.equal(times.at(-1), times.at(-2));
    // Another business's clock is its own.
    const other = await ctx().createTenant();
    now = CLOCK;
    assert.equal(
      await runner.run({ businessId: other.businessId, actor: SYSTEM }, async (c) => c.now),
      new Date(CLOCK).toISOString(),
    );
  });

  it('replays the first response under an Idempotency-Key and refuses the key with another request', async () => {
    const t = await ctx().createTenant();
    const runner = createWriteRunner(ctx().db);
    let runs = 0;
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const work = async () => ({ status: 201, body: { n: ++runs }, headers: { etag: `"${runs}"` } });
    const first = await runner.runIdempotent(scope, { key: 'same', fingerprint: 'a' }, work);
    const again = await runner.runIdempotent(scope, { key: 'same', fingerprint: 'a' }, work);
    assert.deepEqual(first, { response: { status: 201, body: { n: 1 }, headers: { etag: '"1"' } }, replayed: false });
    assert.deepEqual(again, { response: { status: 201, body: { n: 1 }, headers: { etag: '"1"' } }, replayed: true });
    assert.equal(runs, 1);
    await assert.rejects(
      runner.runIdempotent(scope, { key: 'same', fingerprint: 'b' }, work),
      (e: ApiError) => e.code === 'IDEMPOTENCY_KEY_REUSED',
    );
  });

  it('services return the resource as the API shows it, and as it was before the change', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const { patchOrder } = await import('../../src/orders/patch-service.ts');
    const { deleteOrder } = await import('../../src/orders/service.ts');
    const runner = createWriteRunner(ctx().db);
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const patched = await runner.run(scope, (c) => patchOrder(c, order.id, { order: { notes: 'after' } }, [1]));
    assert.deepEqual(patched.before, order);
    assert.equal(patched.resource.notes, 'after');
    assert.equal(patched.resource.version, 2);
    const got = await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t });
    assert.deepEqual(patched.resource, got.body);

    // A stale expected version is a 412 and changes nothing.
    await assert.rejects(
      runner.run(scope, (c) => patchOrder(c, order.id, { order: { notes: 'stale' } }, [1])),
      (e: ApiError) => e.code === 'PRECONDITION_FAILED',
    );

    const deleted = await runner.run(scope, (c) => deleteOrder(c, order.id));
    assert.deepEqual(deleted.before, got.body);
    assert.equal(deleted.resource.phase, 'DELETED');
    assert.equal(deleted.resource.version, 3);
    assert.notEqual(deleted.resource.deletedAt, null);
  });
});

// SQLite has one writer at a time; on PostgreSQL the business's write lock makes its writes take turns.
if (backends.includes('postgres')) {
  describe("[postgres] the write runner and the business's write lock", () => {
    let context: TestContext | undefined;
    before(async () => {
      context = await createTestContext('postgres');
    });
    after(async () => {
      await context?.close();
    });
    const ctx = () => context!;

    it("a write waits for the business's open write to commit and takes a later time; another business's does not wait", async () => {
      const [t, other] = [await ctx().createTenant(), await ctx().createTenant()];
      const runner = createWriteRunner(ctx().db);
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const order: string[] = [];
      const first = runner.run({ businessId: t.businessId, actor: SYSTEM }, async (c) => {
        entered();
        await held;
        order.push('first');
        return c.now;
      });
      await inside;
      const second = runner.run({ businessId: t.businessId, actor: SYSTEM }, async (c) => {
        order.push('second');
        return c.now;
      });
      const elsewhere = await runner.run({ businessId: other.businessId, actor: SYSTEM }, async (c) => {
        order.push('elsewhere');
        return c.now;
      });
      assert.ok(elsewhere);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(order, ['elsewhere'], 'the second write of the business waits for the first');
      release();
      const [a, b] = await Promise.all([first, second]);
      assert.deepEqual(order, ['elsewhere', 'first', 'second']);
      assert.ok(b > a, `${b} after ${a}`);
    });
  });
}

describeEachBackend('an update that changes nothing', (ctx) => {
  it('answers 200 with the same version, ETag and updatedAt, and appends no event, for orders, items, buyers and invoices', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f, { notes: 'same', properties: { erp: { no: 1 } } });
    const item = await ctx().request(
      'GET',
      `/api/v1/items/${(await ctx().request('GET', '/api/v1/items?limit=1', { as: t })).body.items[0].id}`,
      { as: t },
    );
    const buyer = await ctx().request('GET', `/api/v1/buyers/${f.buyerId}`, { as: t });
    const invoice = await ctx().request('POST', '/api/v1/invoices', {
      as: t,
      body: { orderId: order.id, notes: 'same' },
    });
    const last = async () =>
      (await ctx().request('GET', '/api/v1/events?after=0&limit=1000', { as: t })).body.lastSequence;
    const before = await last();
    const cases = [
      {
        path: `/api/v1/orders/${order.id}`,
        body: {
          order: { notes: 'same', properties: { erp: { no: 1 } } },
          updateOrderItems: [{ id: order.orderItems[0].id, quantity: Number(order.orderItems[0].quantity) }],
        },
        was: order,
      },
      { path: `/api/v1/items/${item.body.id}`, body: { name: item.body.name }, was: item.body },
      { path: `/api/v1/buyers/${f.buyerId}`, body: { buyer: { name: buyer.body.name } }, was: buyer.body },
      { path: `/api/v1/invoices/${invoice.body.id}`, body: { notes: 'same' }, was: invoice.body },
    ];
    for (const c of cases) {
      const res = await ctx().request('PATCH', c.path, { as: t, body: c.body });
      assert.equal(res.status, 200, `${c.path}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body, c.was, c.path);
      if (res.headers.etag !== undefined) assert.equal(res.headers.etag, `"${c.was.version}"`);
    }
    assert.equal(await last(), before, 'no event');
    // A real change after them moves on from where they left things.
    const changed = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      body: { order: { notes: 'changed' } },
    });
    assert.equal(changed.body.version, order.version + 1);
    assert.equal(await last(), before + 1);
  });
});

describeEachBackend('an update that changes nothing, under an Idempotency-Key', (ctx) => {
  it('is stored like any answer: a retry replays it, even after another change, and the key with another body is 422', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f, { notes: 'same' });
    const key = { 'idempotency-key': 'no-op-1' };
    const first = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      headers: key,
      body: { order: { notes: 'same' } },
    });
    assert.equal(first.status, 200);
    assert.equal(first.body.version, order.version);
    const other = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      body: { order: { notes: 'changed by someone else' } },
    });
    assert.equal(other.status, 200);
    const retry = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      headers: key,
      body: { order: { notes: 'same' } },
    });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(
      (await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t })).body.notes,
      'changed by someone else',
      'the retry applied nothing',
    );
    const reused = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      headers: key,
      body: { order: { notes: 'else' } },
    });
    assert.equal(reused.status, 422);
  });
});
