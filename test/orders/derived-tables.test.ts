import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Tally } from '../../src/orders/read-model/load.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { assertMatchesRebuild, createFixture, createOrder, patchOrder, projections } from '../helpers/orders.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';

describeEachBackend('order projections', (ctx) => {
  it('kept by every create, PATCH and soft delete exactly as a rebuild from the orders makes them', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), other, await createFixture(ctx(), other), { properties: { erp: { no: 1 } } });

    const orders: Array<{ id: string }> = [];
    orders.push(await createOrder(ctx(), t, f));
    orders.push(
      await createOrder(ctx(), t, f, { phase: 'ACTIVE', properties: { erp: { no: 7, synced: true }, tags: ['a'] } }),
    );
    orders.push(
      await createOrder(ctx(), t, f, { status: 'ACCEPTED', properties: { erp: { no: '7' }, channel: null } }),
    );
    orders.push(await createOrder(ctx(), t, f, { properties: { deep: { a: { b: { c: 1.5 } } } } }));

    const steps: Array<[string, unknown]> = [
      [orders[0].id, { order: { phase: 'ACTIVE', properties: { erp: { no: 8 } } } }],
      [orders[1].id, { order: { properties: { erp: { synced: null, no: 9 } } } }],
      [orders[1].id, { order: { status: 'PACKED' } }],
      [orders[2].id, { order: { properties: { erp: { no: 7 } } } }],
      [orders[3].id, { order: { properties: { deep: { a: { b: { c: 1.5 } } } } } }],
      [orders[3].id, { order: { notes: 'nothing derived changes' } }],
      // Phases move freely: a live order with phase DELETED is live, and not a deleted order.
      [orders[1].id, { order: { phase: 'DELETED' } }],
    ];
    for (const [id, body] of steps) assert.equal((await patchOrder(ctx(), t, id, body)).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[2].id}`, { as: t })).status, 204);
    const untouched = await projections(ctx().db, other.businessId);
    await assertMatchesRebuild(ctx().db, t.businessId);

    // An order last changed on another day, as a PATCH of an older order would leave it.
    await ctx()
      .db.updateTable('orders')
      .set({ updated_at: '2025-02-03T04:05:06.007Z', created_at: '2025-02-03T04:05:06.007Z' })
      .where('id', '=', orders[0].id)
      .execute();
    await rebuildOrderProjections(ctx().db, t.businessId);
    assert.equal((await patchOrder(ctx(), t, orders[0].id, { order: { notes: 'moved to today' } })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[3].id}`, { as: t })).status, 204);

    const maintained = await assertMatchesRebuild(ctx().db, t.businessId);
    // The rebuild is the business's own: another tenant's tables are left as they were.
    assert.deepEqual(await projections(ctx().db, other.businessId), untouched);
    assert.equal(
      maintained.rows.filter((r) => r.order_id === orders[2].id).length,
      0,
      'a deleted order leaves the property index',
    );
    // ... for the deleted orders' one: its channel and erp.no (orders[2], merged) and deep.a.b.c (orders[3]).
    assert.deepEqual(
      maintained.deletedRows.filter((r) => r.order_id === orders[2].id).map((r) => [r.path, r.value]),
      [
        ['channel', null],
        ['erp', null],
        ['erp.no', 'n:7e0'],
      ],
    );
    assert.ok(maintained.deletedPaths.some((r) => r.path === 'deep.a.b.c' && r.phase === 'DELETED' && r.n === 1));
    assert.ok(maintained.rows.some((r) => r.order_id === orders[1].id && r.path === 'erp.no' && r.value === 'n:9e0'));
    // Two soft-deleted orders, each on its created day with phase DELETED; the live order PATCHed to DELETED is counted live.
    assert.deepEqual(
      maintained.deleted.map((r) => [r.phase, r.n]),
      maintained.deleted.length === 1
        ? [['DELETED', 2]]
        : [
            ['DELETED', 1],
            ['DELETED', 1],
          ],
    );
    assert.ok(maintained.created.some((r) => r.phase === 'DELETED' && r.n === 1));
    assert.equal(
      maintained.deletedDays.reduce((sum, r) => sum + r.n, 0),
      2,
      'deleted orders per day of their soft delete',
    );
    assert.ok(maintained.counts.some((r) => r.phase === 'DELETED' && r.n === 1));
  });
});

describe("the demo load's tallies", () => {
  it('count each key and give its parts back as rows, a chunk at a time, a path holding the separator included', () => {
    const tally = new Tally(4);
    const odd = 'a\u0000b';
    tally.add(odd, '2026-01-02', 'ACTIVE', 'ACCEPTED');
    tally.add(odd, '2026-01-02', 'ACTIVE', 'ACCEPTED');
    for (let day = 10; day < 15; day++) tally.add('x.y', `2026-01-${day}`, 'PENDING', 'DRAFT');
    const chunks = [...tally.chunks(2)];
    assert.deepEqual(
      chunks.map((rows) => rows.length),
      [2, 2, 2],
    );
    assert.deepEqual(chunks.flat(), [
      [odd, '2026-01-02', 'ACTIVE', 'ACCEPTED', 2],
      ...[10, 11, 12, 13, 14].map((day) => ['x.y', `2026-01-${day}`, 'PENDING', 'DRAFT', 1]),
    ]);
    assert.deepEqual([...new Tally(2).chunks(1_000)], []);
  });
});
