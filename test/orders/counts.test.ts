import { sql } from 'kysely';
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { assertChangeTotalsExact, createFixture, createOrder, patchOrder, postOrder } from '../helpers/orders.ts';

const PHASES = ['DRAFT', 'PENDING', 'ACTIVE', 'ARCHIVED', 'REJECTED', 'CANCELLED'];
const STATUSES = ['UNASSIGNED', 'ACCEPTED', 'PACKED', 'DELIVERED', 'NOT_APPLICABLE'];

/** Totals the list gives, checked against a brute-force count of the orders table, for every phase/status filter. */
async function assertTotalsExact(ctx: TestContext, t: Tenant) {
  const rows = await ctx.db
    .selectFrom('orders')
    .select(['phase', 'status', 'deleted_at'])
    .where('business_id', '=', t.businessId)
    .execute();
  const live = rows.filter((r) => r.deleted_at === null);
  const expect = (phase?: string, status?: string) =>
    live.filter((r) => (!phase || r.phase === phase) && (!status || r.status === status)).length;
  const total = async (query: string) => {
    const res = await ctx.request('GET', `/api/v1/orders?limit=1${query}`, { as: t });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.total as number;
  };
  assert.equal(await total(''), expect(), 'all live orders');
  assert.equal(await total('&includeDeleted=true'), rows.length, 'including deleted');
  for (const phase of PHASES) assert.equal(await total(`&phase=${phase}`), expect(phase), `phase ${phase}`);
  for (const status of STATUSES)
    assert.equal(await total(`&status=${status}`), expect(undefined, status), `status ${status}`);
  for (const phase of PHASES) {
    for (const status of STATUSES)
      assert.equal(await total(`&phase=${phase}&status=${status}`), expect(phase, status), `${phase}/${status}`);
  }
  // The maintained table itself: never negative, and equal to the brute-force count per pair.
  const counts = await ctx.db
    .selectFrom('order_counts')
    .select(['phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', t.businessId)
    .groupBy(['phase', 'status'])
    .execute();
  for (const c of counts) assert.equal(Number(c.n), expect(c.phase, c.status), `order_counts ${c.phase}/${c.status}`);
}

describeEachBackend('maintained order counts', (ctx) => {
  it('follow creates, phase/status PATCHes, soft deletes and concurrent writers exactly', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), other, await createFixture(ctx(), other));
    await assertTotalsExact(ctx(), t);

    const orders = [];
    orders.push(await createOrder(ctx(), t, f));
    orders.push(await createOrder(ctx(), t, f, { phase: 'ACTIVE', status: 'ACCEPTED' }));
    orders.push(await createOrder(ctx(), t, f, { phase: 'ACTIVE' }));
    orders.push(await createOrder(ctx(), t, f, { status: 'ACCEPTED' }));
    await assertTotalsExact(ctx(), t);

    // Phase only, status only, both, and a PATCH that touches neither.
    assert.equal((await patchOrder(ctx(), t, orders[0].id, { order: { phase: 'ACTIVE' } })).status, 200);
    assert.equal((await patchOrder(ctx(), t, orders[1].id, { order: { status: 'PACKED' } })).status, 200);
    assert.equal(
      (await patchOrder(ctx(), t, orders[2].id, { order: { phase: 'ARCHIVED', status: 'DELIVERED' } })).status,
      200,
    );
    assert.equal((await patchOrder(ctx(), t, orders[3].id, { order: { notes: 'no change of phase' } })).status, 200);
    // Setting the values it already has changes nothing.
    assert.equal(
      (await patchOrder(ctx(), t, orders[3].id, { order: { phase: 'PENDING', status: 'ACCEPTED' } })).status,
      200,
    );
    await assertTotalsExact(ctx(), t);

    // Soft delete, and deleting again (404) does not count twice.
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[1].id}`, { as: t })).status, 204);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[1].id}`, { as: t })).status, 404);
    await assertTotalsExact(ctx(), t);

    // Concurrent creates, PATCHes of one order back and forth, PATCHes of different orders, and deletes.
    const more = await Promise.all(
      Array.from({ length: 6 }, (_, i) => createOrder(ctx(), t, f, { phase: PHASES[i % PHASES.length] })),
    );
    await assertTotalsExact(ctx(), t);
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 12; i++) {
      writes.push(
        patchOrder(ctx(), t, orders[0].id, {
          order: { phase: PHASES[i % PHASES.length], status: STATUSES[i % STATUSES.length] },
        }),
      );
      writes.push(
        patchOrder(ctx(), t, more[i % more.length].id, { order: { status: STATUSES[(i + 2) % STATUSES.length] } }),
      );
    }
    writes.push(ctx().request('DELETE', `/api/v1/orders/${more[0].id}`, { as: t }));
    writes.push(ctx().request('DELETE', `/api/v1/orders/${more[0].id}`, { as: t }));
    writes.push(ctx().request('DELETE', `/api/v1/orders/${more[1].id}`, { as: t }));
    writes.push(postOrder(ctx(), t, f, { phase: 'DRAFT' }));
    const results = (await Promise.all(writes)) as Array<{ status?: number }>;
    assert.ok(
      results.every((r) => [200, 201, 204, 404].includes(r.status ?? 0)),
      JSON.stringify(results.map((r) => r.status)),
    );
    await assertTotalsExact(ctx(), t);
  });

  it('order_change_counts follow creates, PATCHes that move an order to another day, soft deletes and concurrent writers', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), other, await createFixture(ctx(), other));
    const orders = [];
    for (let i = 0; i < 6; i++) orders.push(await createOrder(ctx(), t, f));
    await assertChangeTotalsExact(ctx(), t);

    // Orders last changed on earlier days (pinned directly, then recounted as a bulk load would).
    const days = [
      '2025-03-01T10:00:00.000Z',
      '2025-03-01T23:59:59.999Z',
      '2025-03-02T00:00:00.000Z',
      '2025-06-30T12:00:00.000Z',
    ];
    for (const [i, at] of days.entries()) {
      await ctx()
        .db.updateTable('orders')
        .set({ created_at: at, updated_at: at })
        .where('id', '=', orders[i].id)
        .execute();
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    await assertChangeTotalsExact(ctx(), t);

    // A PATCH moves an order from its old day to today; a second one keeps it on today; a delete takes it off its day.
    assert.equal((await patchOrder(ctx(), t, orders[0].id, { order: { notes: 'moved to today' } })).status, 200);
    assert.equal((await patchOrder(ctx(), t, orders[4].id, { order: { notes: 'same day' } })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[1].id}`, { as: t })).status, 204);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[1].id}`, { as: t })).status, 404);
    await assertChangeTotalsExact(ctx(), t);

    // Concurrent writers.
    const writes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 8; i++)
      writes.push(patchOrder(ctx(), t, orders[i % 4 === 1 ? 2 : i % 4].id, { order: { notes: `n${i}` } }));
    writes.push(ctx().request('DELETE', `/api/v1/orders/${orders[3].id}`, { as: t }));
    writes.push(postOrder(ctx(), t, f), postOrder(ctx(), t, f));
    const results = (await Promise.all(writes)) as Array<{ status?: number }>;
    assert.ok(
      results.every((r) => [200, 201, 204, 404].includes(r.status ?? 0)),
      JSON.stringify(results.map((r) => r.status)),
    );
    await assertChangeTotalsExact(ctx(), t);
    // The other business's counts are its own.
    await assertChangeTotalsExact(ctx(), other);
  });
});
