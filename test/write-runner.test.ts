import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createApp } from '../src/app.ts';
import { deferToCommit, valueAtCommit } from '../src/db/deferred.ts';
import { storedBlock } from '../src/events/codec.ts';
import { isUniqueViolation } from '../src/db/dialect.ts';
import { ApiError } from '../src/lib/errors.ts';
import { createWriteRunner, SYSTEM, type WriteContext } from '../src/write/runner.ts';
import { backends, createTestContext, describeEachBackend, type TestContext } from './helpers/context.ts';
import { createFixture, createOrder } from './helpers/orders.ts';

const CLOCK = Date.parse('2031-05-06T07:08:09.010Z');

describeEachBackend('the write runner', (ctx) => {
  it('hands every write its context: the business, the API key, the request id, the Idempotency-Key and the injected clock', async () => {
    const t = await ctx().createTenant();
    const seen: WriteContext[] = [];
    const runner = createWriteRunner(ctx().db, { clock: () => CLOCK });
    const spy = {
      run: <T>(scope: Parameters<typeof runner.run>[0], work: (c: WriteContext) => Promise<T>) =>
        runner.run(scope, (c) => { seen.push(c); return work(c); }),
      runIdempotent: (scope: Parameters<typeof runner.runIdempotent>[0], key: Parameters<typeof runner.runIdempotent>[1], work: Parameters<typeof runner.runIdempotent>[2]) =>
        runner.runIdempotent(scope, key, (c) => { seen.push(c); return work(c); }),
    };
    const app = await createApp({ db: ctx().db, config: ctx().config, rateLimiter: null, clock: () => CLOCK, writes: spy });
    try {
      const created = await app.inject({
        method: 'POST', url: '/api/v1/items', headers: { ...t.headers, 'x-request-id': 'req-runner-1', 'idempotency-key': 'k-1' },
        payload: { item: { name: 'Clocked' }, variants: [{ currency: 'AUD', price: 1 }] },
      });
      assert.equal(created.statusCode, 201, created.body);
      const item = await app.inject({ method: 'GET', url: `/api/v1/items/${created.json().id}`, headers: t.headers });
      // Every timestamp the write stored is the injected clock's, not the machine's.
      assert.equal(item.json().createdAt, new Date(CLOCK).toISOString());
      assert.equal(item.json().variants[0].createdAt, new Date(CLOCK).toISOString());

      const deleted = await app.inject({ method: 'DELETE', url: `/api/v1/items/${created.json().id}`, headers: { ...t.headers, 'x-request-id': 'req-runner-2' } });
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
    const counter = () => ctx().db.selectFrom('business_counters').select('value')
      .where('business_id', '=', t.businessId).where('name', '=', 'runner-test').executeTakeFirst();
    const write = (value: number) => (c: WriteContext) => c.trx.insertInto('business_counters')
      .values({ business_id: c.businessId, name: 'runner-test', value }).execute();

    await assert.rejects(runner.run({ businessId: t.businessId, actor: SYSTEM }, async (c) => {
      await write(1)(c);
      throw new ApiError('CONFLICT', 'no');
    }), /no/);
    assert.equal(await counter(), undefined);
    await runner.run({ businessId: t.businessId, actor: SYSTEM }, write(2));
    assert.equal(Number((await counter())?.value), 2);
  });

  it('sends deferred statements with its commit, in order, after the work: a failing one rolls back the whole write and its events', async () => {
    const t = await ctx().createTenant();
    const runner = createWriteRunner(ctx().db);
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const counter = (name: string) => ctx().db.selectFrom('business_counters').select('value')
      .where('business_id', '=', t.businessId).where('name', '=', name).executeTakeFirst();
    const insert = (c: WriteContext, name: string, value: number) => c.trx.insertInto('business_counters').values({ business_id: c.businessId, name, value });
    const events = async () => (await ctx().request('GET', '/api/v1/events?limit=1000', { as: t })).body.items.length as number;
    const eventsBefore = await events();

    const seenInWork = await runner.run(scope, async (c) => {
      await deferToCommit(c.trx, insert(c, 'deferred-a', 1));
      await deferToCommit(c.trx, c.trx.updateTable('business_counters').set({ value: 2 })
        .where('business_id', '=', c.businessId).where('name', '=', 'deferred-a'));
      c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_deferred', object: { id: 'itm_deferred' } });
      // Not yet run while the work goes on.
      return (await c.trx.selectFrom('business_counters').select('value').where('business_id', '=', c.businessId).where('name', '=', 'deferred-a').executeTakeFirst());
    });
    assert.equal(seenInWork, undefined);
    assert.equal(Number((await counter('deferred-a'))?.value), 2, 'both ran, the update after the insert');
    assert.equal(await events(), eventsBefore + 1);

    // The second deferred insert repeats a primary key: the write, its first insert and its event are all undone.
    await assert.rejects(runner.run(scope, async (c) => {
      await insert(c, 'direct-b', 1).execute();
      await deferToCommit(c.trx, insert(c, 'deferred-c', 1));
      await deferToCommit(c.trx, insert(c, 'deferred-a', 1));
      c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_deferred', object: { id: 'itm_deferred' } });
    }), (e: unknown) => isUniqueViolation(e));
    assert.equal(await counter('direct-b'), undefined);
    assert.equal(await counter('deferred-c'), undefined);
    assert.equal(await events(), eventsBefore + 1);
    // And the same without events, which sends them on their own.
    await assert.rejects(runner.run(scope, async (c) => {
      await insert(c, 'direct-b', 1).execute();
      await deferToCommit(c.trx, insert(c, 'deferred-a', 1));
    }), (e: unknown) => isUniqueViolation(e));
    assert.equal(await counter('direct-b'), undefined);
    // Outside a write, a deferred statement runs at once.
    await deferToCommit(ctx().db, insert({ trx: ctx().db, businessId: t.businessId } as unknown as WriteContext, 'outside', 3));
    assert.equal(Number((await counter('outside'))?.value), 3);
  });

  it('fills a text taken at commit into the answer, the events and the stored replay (PostgreSQL); SQLite and code outside a write take it at once', async () => {
    const t = await ctx().createTenant();
    const runner = createWriteRunner(ctx().db);
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const take = (c: WriteContext) => (setting: string) => sql`with n as (
        insert into business_counters (business_id, name, value) values (${c.businessId}, ${'taken'}, 41)
        on conflict (business_id, name) do update set value = business_counters.value + 1 returning value)
      select set_config(${setting}, ${'T-'} || n.value, true) as value from n`;
    const object = (id: string, ref: string) => ({ id, ref, nested: [{ ref }, 'other', `within ${ref}!`] });
    const { response } = await runner.runIdempotent(scope, { key: 'taken-1', fingerprint: 'f' }, async (c) => {
      const placeholder = valueAtCommit(c.trx, take(c));
      assert.equal(placeholder === undefined, ctx().backend === 'sqlite');
      const ref = placeholder ?? 'T-41';
      c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_taken', object: object('itm_taken', ref) });
      return { status: 201, body: object('itm_taken', ref) };
    });
    assert.deepEqual(response.body, object('itm_taken', 'T-41'));
    const [event] = (await ctx().request('GET', '/api/v1/events?resourceId=itm_taken', { as: t })).body.items;
    assert.deepEqual(event.data.object, object('itm_taken', 'T-41'));
    const replay = await runner.runIdempotent(scope, { key: 'taken-1', fingerprint: 'f' }, async () => assert.fail('replayed, not run'));
    assert.deepEqual(replay.response.body, object('itm_taken', 'T-41'));
    // Two in one write, without events, and rolled back with a failing write.
    const two = await runner.run(scope, async (c) => [valueAtCommit(c.trx, take(c)) ?? 'none', valueAtCommit(c.trx, take(c)) ?? 'none']);
    assert.deepEqual(two, ctx().backend === 'sqlite' ? ['none', 'none'] : ['T-42', 'T-43']);
    if (ctx().backend === 'postgres') {
      // Two in one event, each in its own places.
      const both = await runner.run(scope, async (c) => {
        const [a, b] = [valueAtCommit(c.trx, take(c))!, valueAtCommit(c.trx, take(c))!];
        const object2 = { id: 'itm_two', a, b, s: [b, a, `${a}/${b}`] };
        c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_two', object: object2 });
        return { a, b };
      });
      assert.deepEqual(both, { a: 'T-44', b: 'T-45' });
      const [two2] = (await ctx().request('GET', '/api/v1/events?resourceId=itm_two', { as: t })).body.items;
      assert.deepEqual(two2.data.object, { id: 'itm_two', a: 'T-44', b: 'T-45', s: ['T-45', 'T-44', 'T-44/T-45'] });
      // A take that sets nothing, or a text that cannot go into JSON as it is, fails the write before it commits.
      const eventsBefore = (await ctx().request('GET', '/api/v1/events?limit=1000', { as: t })).body.items.length;
      for (const bad of [
        (s: string) => sql`select set_config(${s}, ${'never'}, true) as value where 1 = ${2}`,
        (s: string) => sql`select set_config(${s}, ${'a"b'}, true) as value`,
      ]) {
        await assert.rejects(runner.run(scope, async (c) => {
          valueAtCommit(c.trx, take(c));
          valueAtCommit(c.trx, bad);
          c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_bad', object: { id: 'itm_bad' } });
        }), /was not taken, or is not one a commit can fill in/);
      }
      assert.equal((await ctx().request('GET', '/api/v1/events?limit=1000', { as: t })).body.items.length, eventsBefore);
    }
    await assert.rejects(runner.run(scope, async (c) => {
      valueAtCommit(c.trx, take(c));
      for (let i = 0; i < 2; i++) await deferToCommit(c.trx, c.trx.insertInto('business_counters').values({ business_id: c.businessId, name: 'twice', value: 1 }));
      c.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_taken', object: { id: 'itm_taken' } });
    }), (e: unknown) => isUniqueViolation(e));
    assert.equal(valueAtCommit(ctx().db, take({ businessId: t.businessId } as WriteContext)), undefined, 'outside a write');
    if (ctx().backend === 'postgres') {
      const counter = await ctx().db.selectFrom('business_counters').select('value').where('business_id', '=', t.businessId).where('name', '=', 'taken').executeTakeFirstOrThrow();
      assert.equal(Number(counter.value), 45, 'the failed writes gave their numbers back');
      for (const text of ['', 'SO-000001', 'ünï "c\\"', 'x'.repeat(300)]) {
        const { rows: [block] } = await sql<{ b: Buffer }>`select deflate_stored_block(${text}) as b`.execute(ctx().db);
        assert.deepEqual(block.b, storedBlock(text));
      }
    }
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
    await assert.rejects(runner.runIdempotent(scope, { key: 'same', fingerprint: 'b' }, work), (e: ApiError) => e.code === 'IDEMPOTENCY_KEY_REUSED');
  });

  it('services return the resource as the API shows it, and as it was before the change', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const { patchOrder } = await import('../src/orders/patch-service.ts');
    const { deleteOrder } = await import('../src/orders/service.ts');
    const runner = createWriteRunner(ctx().db);
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const patched = await runner.run(scope, (c) => patchOrder(c, order.id, { order: { notes: 'after' } }, [1]));
    assert.deepEqual(patched.before, order);
    assert.equal(patched.resource.notes, 'after');
    assert.equal(patched.resource.version, 2);
    const got = await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t });
    assert.deepEqual(patched.resource, got.body);

    // A stale expected version is a 412 and changes nothing.
    await assert.rejects(runner.run(scope, (c) => patchOrder(c, order.id, { order: { notes: 'stale' } }, [1])),
      (e: ApiError) => e.code === 'PRECONDITION_FAILED');

    const deleted = await runner.run(scope, (c) => deleteOrder(c, order.id));
    assert.deepEqual(deleted.before, got.body);
    assert.equal(deleted.resource.phase, 'DELETED');
    assert.equal(deleted.resource.version, 3);
    assert.notEqual(deleted.resource.deletedAt, null);
  });
});

// SQLite has one writer at a time, and no row locks to hold.
if (backends.includes('postgres')) {
  describe('[postgres] the write runner and row locks', () => {
    let context: TestContext | undefined;
    before(async () => { context = await createTestContext('postgres'); });
    after(async () => { await context?.close(); });
    const ctx = () => context!;

    it('an order write holds no lock on the shared count rows until its commit', async () => {
      const t = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, f, { properties: { erp: { no: 1 } } });
      const day = order.createdAt.slice(0, 10);
      // Every shard's row of the counts a create and a PATCH add to exists, so whichever shard the write picks, it would lock a row.
      const shards = Array.from({ length: 16 }, (_, shard) => shard);
      const rows = { business_id: t.businessId, n: 0 };
      const add = async (table: string, keys: Record<string, string>) => {
        for (const shard of shards) {
          await sql`insert into ${sql.table(table)} (${sql.join(Object.keys({ ...rows, ...keys, shard }).map((k) => sql.ref(k)))})
            values (${sql.join(Object.values({ ...rows, ...keys, shard }))}) on conflict do nothing`.execute(ctx().db);
        }
      };
      await add('order_counts', { phase: 'PENDING', status: 'UNASSIGNED' });
      await add('order_counts', { phase: 'ACTIVE', status: 'UNASSIGNED' });
      await add('order_change_counts', { day, created_day: day });
      await add('order_created_counts', { day, phase: 'PENDING', status: 'UNASSIGNED' });
      await add('order_created_counts', { day, phase: 'ACTIVE', status: 'UNASSIGNED' });
      await add('order_property_counts', { path: 'erp.no', day, phase: 'PENDING', status: 'UNASSIGNED' });
      await add('order_property_counts', { path: 'erp.no', day, phase: 'ACTIVE', status: 'UNASSIGNED' });
      const tables = ['order_counts', 'order_change_counts', 'order_created_counts', 'order_property_counts'];
      const locked: string[] = [];
      const runner = createWriteRunner(ctx().db);
      const probing = {
        run: <T>(scope: Parameters<typeof runner.run>[0], work: (c: WriteContext) => Promise<T>) => runner.run(scope, async (c) => {
          const result = await work(c);
          // From another connection, while the write's transaction is open after its work.
          for (const table of tables) {
            await sql`select 1 from ${sql.table(table)} where business_id = ${t.businessId} for update nowait`.execute(ctx().db)
              .catch((e: { code?: string }) => { if (e.code === '55P03') locked.push(table); else throw e; });
          }
          return result;
        }),
        runIdempotent: runner.runIdempotent,
      };
      const app = await createApp({ db: ctx().db, config: ctx().config, rateLimiter: null, writes: probing });
      try {
        const created = await app.inject({ method: 'POST', url: `/api/v1/buyers/${f.buyerId}/orders`, headers: t.headers,
          payload: { expectedDeliveryAt: '2030-01-01T00:00:00.000Z', properties: { erp: { no: 2 } }, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1 }] } });
        assert.equal(created.statusCode, 201, created.body);
        const patched = await app.inject({ method: 'PATCH', url: `/api/v1/orders/${order.id}`, headers: t.headers, payload: { order: { phase: 'ACTIVE' } } });
        assert.equal(patched.statusCode, 200, patched.body);
      } finally {
        await app.close();
      }
      assert.deepEqual(locked, []);
    });
  });
}
