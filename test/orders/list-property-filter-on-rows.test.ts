import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { filterOrders, filtersForRange, type ListOrdersOptions } from '../../src/orders/read-model/plan.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { backends, createTestContext, describeEachBackend, type TestContext } from '../helpers/context.ts';
import { PATH, UPDATED_SINCE } from '../helpers/list-fixture.ts';
import { createFixture, createOrder, withListTuning } from '../helpers/orders.ts';

/**
 * Where a list reads a short range of rows, PostgreSQL tests the property filter on each row's JSON
 * and SQLite through the side table (src/orders/read-model/plan.ts filtersForRange). Each test removes an
 * order's side-table row, so the answer says which one a backend read.
 */

describeEachBackend('GET /api/v1/orders: the older part of a changed-since list', (ctx) => {
  it("tests the property filter on each order's JSON on PostgreSQL, through the side table on SQLite", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    // Created before the window and changed in it: the older part. Then its side-table row is
    // removed, so only a read of the order's own JSON still finds the path (src/orders/read-model/plan.ts, filtersForRange).
    const { id } = await createOrder(ctx(), t, f, { properties: { erp: { no: 7 } } });
    await ctx()
      .db.updateTable('orders')
      .set({ created_at: '2025-01-15T00:00:00.000Z', updated_at: '2025-03-07T00:00:00.000Z' })
      .where('id', '=', id)
      .execute();
    await rebuildOrderProjections(ctx().db, t.businessId);
    await ctx().db.deleteFrom('order_properties').where('order_id', '=', id).execute();
    const since = `updatedSince=${UPDATED_SINCE}`;
    // No candidates few enough to collect (a value's count reads the side table: 0 here), so the
    // changed-since split plans the list.
    await withListTuning({ fewCandidates: -1 }, async () => {
      // The path is in the order's JSON, and no longer in the side table.
      const json = ctx().backend === 'postgres';
      for (const [filter, found] of [
        ['propertyPath=erp.no', json],
        ['propertyPath=erp.no&propertyValue=7', json],
        ['propertyPath=erp.no&propertyExists=false', !json],
      ] as const) {
        const res = await ctx().request('GET', `/api/v1/orders?${filter}&${since}`, { as: t });
        assert.equal(res.status, 200, filter);
        const expected = found ? [id] : [];
        assert.deepEqual(
          res.body.items.map((o: { id: string }) => o.id),
          expected,
          filter,
        );
        assert.equal(res.body.total, expected.length, filter);
      }
    });
  });
});

describeEachBackend('GET /api/v1/orders: the rows of the day a walk starts in', (ctx) => {
  it("are filtered by each order's JSON on PostgreSQL, through the side table on SQLite", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    // Three orders with the path on one day, newest first; the middle one's side-table row is then removed.
    const ids: string[] = [];
    for (const time of ['18', '12', '06']) {
      const { id } = await createOrder(ctx(), t, f, { properties: { erp: { no: 1 } } });
      await ctx()
        .db.updateTable('orders')
        .set({ created_at: `2025-01-15T${time}:00:00.000Z`, updated_at: `2025-01-15T${time}:00:00.000Z` })
        .where('id', '=', id)
        .execute();
      ids.push(id);
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    await ctx().db.deleteFrom('order_properties').where('order_id', '=', ids[1]).execute();
    const json = ctx().backend === 'postgres';
    // Page 2 of 1, walked by day (not collected from the side table): the day's rows are read.
    const page = await withListTuning({ shallowRows: 0, fewCandidates: -1 }, () =>
      ctx().request('GET', '/api/v1/orders?propertyPath=erp.no&limit=1&page=2', { as: t }),
    );
    assert.equal(page.status, 200);
    assert.deepEqual(
      page.body.items.map((o: { id: string }) => o.id),
      [json ? ids[1] : ids[2]],
    );
    // createdSince's own day is counted by query.
    const since = await ctx().request(
      'GET',
      '/api/v1/orders?propertyPath=erp.no&createdSince=2025-01-15T00:00:00.000Z',
      { as: t },
    );
    assert.equal(since.status, 200);
    assert.equal(since.body.total, json ? 3 : 2);
    // A walk from the list's end, short enough not to pass days by their counts (shallowRows), reads the same way.
    const shallow = await withListTuning({ fewCandidates: -1 }, () =>
      ctx().request('GET', '/api/v1/orders?propertyPath=erp.no&limit=1&page=2', { as: t }),
    );
    assert.equal(shallow.status, 200);
    assert.deepEqual(
      shallow.body.items.map((o: { id: string }) => o.id),
      [json ? ids[1] : ids[2]],
    );
  });
});

for (const backend of backends.filter((b) => b === 'postgres')) {
  describe(`[${backend}] order list plan: a property test on the rows' JSON`, () => {
    let context: TestContext;
    before(async () => {
      context = await createTestContext(backend);
    });
    after(async () => {
      await context?.close();
    });

    it('is estimated at a fair share of the rows, present or absent, so a walk keeps the created index', async () => {
      // PostgreSQL estimates `x IS NULL` on an expression without statistics at 0.5 % of the rows.
      // For an absent path (common) that made it sort a scan of the whole table rather than walk
      // the created index past the page's offset: 890 ms against 16 ms at 1M orders.
      const t = await context.createTenant();
      const f = await createFixture(context, t);
      for (let i = 0; i < 200; i++) await createOrder(context, t, f, i % 2 ? { properties: { erp: { no: i } } } : {});
      await sql`analyze orders`.execute(context.db);
      for (const exists of [false, true]) {
        const options: ListOrdersOptions = {
          page: 1,
          limit: 20,
          includeDeleted: false,
          property: { segments: PATH, exists },
        };
        const query = filterOrders(
          { db: context.db, businessId: t.businessId, options },
          {},
          filtersForRange(context.db),
        )
          .select('id')
          .compile();
        const {
          rows: [
            {
              'QUERY PLAN': [plan],
            },
          ],
        } = await context.db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
          CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
        );
        assert.ok(plan.Plan['Plan Rows'] >= 20, `exists=${exists}: estimated ${plan.Plan['Plan Rows']} of 200 rows`);
      }
    });
  });
}
