import assert from 'node:assert/strict';
import { it } from 'node:test';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createQueryCounter } from '../helpers/queries.ts';
import { pageByCreatedDay } from '../../src/orders/read-model/days.ts';
import { testListTuning, walkingEveryDay, withListTuning } from '../helpers/orders.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';

const list = (ctx: TestContext, as: Tenant, query = '') => ctx.request('GET', `/api/v1/orders${query}`, { as });

/** Creates orders and pins their timestamps, so that strict windows can be tested to the millisecond. */
async function ordersAt(ctx: TestContext, as: Tenant, times: Array<[created: string, updated: string]>) {
  const f = await createFixture(ctx, as);
  const ids: string[] = [];
  for (const [created, updated] of times) {
    const { id } = await createOrder(ctx, as, f);
    await ctx.db.updateTable('orders').set({ created_at: created, updated_at: updated }).where('id', '=', id).execute();
    ids.push(id);
  }
  // Written around the repositories, as a bulk load would be: the changed-since counts are rebuilt the same way.
  await rebuildOrderProjections(ctx.db, as.businessId);
  return ids;
}

const idsOf = (res: { body: { items: Array<{ id: string }> } }) => res.body.items.map((o) => o.id);

function assertBadRequest(res: { status: number; body: any }, field: string) {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
  assert.ok(res.body.fieldErrors?.[field], JSON.stringify(res.body));
}

describeEachBackend('GET /api/v1/orders', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/orders', crossTenant: false });

  it('answers the envelope with defaults page 1 and limit 20, full orders with items, newest first', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const a = await createOrder(ctx(), t, f);
    const b = await createOrder(ctx(), t, f);
    const res = await list(ctx(), t);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['items', 'nextCursor', 'page', 'pageSize', 'total']);
    assert.deepEqual([res.body.total, res.body.page, res.body.pageSize], [2, 1, 20]);
    assert.deepEqual(idsOf(res), [b.id, a.id]);
    assert.deepEqual(res.body.items[1], (await getOrder(ctx(), t, a.id)).body);
    assert.equal(res.body.items[0].orderItems[0].itemListEntry.itemVariant.id, f.variantIds[0]);
  });

  it('limit is at most 100 (101 gives 400); page is at least 1', async () => {
    const t = await ctx().createTenant();
    assert.equal((await list(ctx(), t, '?limit=100')).status, 200);
    assertBadRequest(await list(ctx(), t, '?limit=101'), 'limit');
    assertBadRequest(await list(ctx(), t, '?page=0'), 'page');
  });

  it('pages in createdAt desc, id desc order, stable across pages', async () => {
    const t = await ctx().createTenant();
    const same = '2025-01-01T00:00:00.000Z';
    const ids = await ordersAt(ctx(), t, [
      [same, same],
      [same, same],
      ['2025-01-02T00:00:00.000Z', same],
      [same, same],
      [same, same],
    ]);
    const expected = [ids[2], ...[ids[0], ids[1], ids[3], ids[4]].sort().reverse()];
    const pages = [];
    for (const page of [1, 2, 3]) pages.push(...idsOf(await list(ctx(), t, `?limit=2&page=${page}`)));
    assert.deepEqual(pages, expected);
    const last = await list(ctx(), t, '?limit=2&page=3');
    assert.deepEqual([last.body.total, last.body.page, last.body.pageSize], [5, 3, 2]);
  });

  it('createdSince, updatedSince and modifiedSince are strictly greater, at millisecond precision', async () => {
    const t = await ctx().createTenant();
    const [old, edited, fresh] = await ordersAt(ctx(), t, [
      ['2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
      ['2025-01-01T00:00:00.000Z', '2025-03-01T00:00:00.001Z'],
      ['2025-03-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z'],
    ]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?createdSince=2025-03-01T00:00:00.000Z')), []);
    assert.deepEqual(idsOf(await list(ctx(), t, '?createdSince=2025-02-28T23:59:59.999Z')), [fresh]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?updatedSince=2025-03-01T00:00:00.000Z')), [edited]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?modifiedSince=2025-02-01T00:00:00Z')), [fresh, edited]);
    assert.deepEqual(idsOf(await list(ctx(), t, '?modifiedSince=2025-03-01T00:00:00.000Z')), [edited]);
    // An offset is another way to write the same instant.
    assert.deepEqual(
      idsOf(await list(ctx(), t, `?createdSince=${encodeURIComponent('2025-03-01T10:00:00.000+10:00')}`)),
      [],
    );
    assert.deepEqual(idsOf(await list(ctx(), t, '?modifiedSince=2024-01-01T00:00:00Z')).length, 3, String(old));
  });

  it('rule 1: modifiedSince cannot be combined with createdSince or updatedSince; those two combine', async () => {
    const t = await ctx().createTenant();
    const ts = '2025-01-01T00:00:00Z';
    assertBadRequest(await list(ctx(), t, `?modifiedSince=${ts}&createdSince=${ts}`), 'modifiedSince');
    assertBadRequest(await list(ctx(), t, `?modifiedSince=${ts}&updatedSince=${ts}`), 'modifiedSince');
    assert.equal((await list(ctx(), t, `?createdSince=${ts}&updatedSince=${ts}`)).status, 200);
  });

  it('createdSince and updatedSince combined apply both', async () => {
    const t = await ctx().createTenant();
    const [, both] = await ordersAt(ctx(), t, [
      ['2025-01-01T00:00:00.000Z', '2025-06-01T00:00:00.000Z'],
      ['2025-03-01T00:00:00.000Z', '2025-06-01T00:00:00.000Z'],
      ['2025-03-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z'],
    ]);
    assert.deepEqual(
      idsOf(await list(ctx(), t, '?createdSince=2025-02-01T00:00:00Z&updatedSince=2025-05-01T00:00:00Z')),
      [both],
    );
  });

  it('modifiedSince and updatedSince page through orders created in the window, then older orders changed in it, at any page size', async () => {
    const t = await ctx().createTenant();
    const since = '2025-03-01T00:00:00.000Z';
    const ids = await ordersAt(ctx(), t, [
      ['2025-03-05T00:00:00.000Z', '2025-03-05T00:00:00.000Z'], // 0: created in the window
      ['2025-03-02T00:00:00.000Z', '2025-03-09T00:00:00.000Z'], // 1: created in the window, changed since
      ['2025-03-02T00:00:00.000Z', '2025-03-02T00:00:00.000Z'], // 2: same createdAt as 1 (id breaks the tie)
      ['2025-02-20T00:00:00.000Z', '2025-03-10T00:00:00.000Z'], // 3: created before, changed in the window
      ['2025-01-10T00:00:00.000Z', '2025-03-01T00:00:00.001Z'], // 4: created before, changed 1 ms into the window
      ['2025-01-05T00:00:00.000Z', '2025-03-20T00:00:00.000Z'], // 5: created before, changed in the window
      ['2025-02-25T00:00:00.000Z', since], //                        6: changed exactly at `since`: out
      ['2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z'], // 7: out
    ]);
    const expected = [ids[0], ...[ids[1], ids[2]].sort().reverse(), ids[3], ids[4], ids[5]];
    for (const name of ['modifiedSince', 'updatedSince']) {
      for (const limit of [1, 2, 3, 4, 7]) {
        const seen: string[] = [];
        for (let page = 1; page <= Math.ceil(expected.length / limit) + 1; page++) {
          const res = await list(ctx(), t, `?${name}=${since}&limit=${limit}&page=${page}`);
          assert.equal(res.body.total, expected.length, `${name} limit ${limit} page ${page}`);
          seen.push(...idsOf(res));
        }
        assert.deepEqual(seen, expected, `${name} limit ${limit}`);
      }
    }
    // Other filters still apply to both parts of the window.
    await ctx()
      .db.updateTable('orders')
      .set({ status: 'ACCEPTED' })
      .where('id', 'in', [ids[2], ids[5], ids[7]])
      .execute();
    // Written around the write path, as a load would: the counts are rebuilt from the orders.
    await rebuildOrderProjections(ctx().db, t.businessId);
    assert.deepEqual(idsOf(await list(ctx(), t, `?modifiedSince=${since}&status=ACCEPTED&limit=1&page=2`)), [ids[5]]);
  });

  it('rule 2: propertyValue and propertyExists cannot be used together', async () => {
    const t = await ctx().createTenant();
    assertBadRequest(await list(ctx(), t, '?propertyPath=a&propertyValue=1&propertyExists=true'), 'propertyValue');
  });

  it('rule 3: propertyValue and propertyExists each require propertyPath', async () => {
    const t = await ctx().createTenant();
    assertBadRequest(await list(ctx(), t, '?propertyValue=1'), 'propertyPath');
    assertBadRequest(await list(ctx(), t, '?propertyExists=false'), 'propertyPath');
  });

  it('rule 4: an invalid timestamp gives 400', async () => {
    const t = await ctx().createTenant();
    for (const name of ['createdSince', 'updatedSince', 'modifiedSince']) {
      assertBadRequest(await list(ctx(), t, `?${name}=yesterday`), name);
      assertBadRequest(await list(ctx(), t, `?${name}=2025-13-01T00:00:00Z`), name);
    }
  });

  it("rule 5: only the caller's orders, without soft-deleted ones unless includeDeleted=true", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const kept = await createOrder(ctx(), t, f);
    const gone = await createOrder(ctx(), t, f);
    await createOrder(ctx(), other, await createFixture(ctx(), other));
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${gone.id}`, { as: t })).status, 204);
    const res = await list(ctx(), t);
    assert.deepEqual([idsOf(res), res.body.total], [[kept.id], 1]);
    const all = await list(ctx(), t, '?includeDeleted=true');
    assert.deepEqual(idsOf(all), [gone.id, kept.id]);
    assert.equal(all.body.items[0].phase, 'DELETED');
    assert.match(all.body.items[0].deletedAt, /Z$/);
  });

  it('filters by phase and status enums, rejecting unknown values', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const a = await createOrder(ctx(), t, f, { phase: 'ACTIVE', status: 'ACCEPTED' });
    await createOrder(ctx(), t, f, { phase: 'ACTIVE' });
    await createOrder(ctx(), t, f, { status: 'ACCEPTED' });
    assert.deepEqual(idsOf(await list(ctx(), t, '?phase=ACTIVE&status=ACCEPTED')), [a.id]);
    assert.equal((await list(ctx(), t, '?phase=ACTIVE')).body.total, 2);
    assert.equal((await list(ctx(), t, '?status=ACCEPTED')).body.total, 2);
    // The order guide's statuses are taken as filters (test/db/upgrade-compatibility.test.ts); an unknown one is refused.
    assertBadRequest(await list(ctx(), t, '?status=SHIPPING'), 'status');
    const bad = await list(ctx(), t, '?phase=SHIPPED');
    assertBadRequest(bad, 'phase');
    assert.match(bad.body.fieldErrors.phase, /^Invalid enum value\. Expected 'DRAFT' \| /);
  });

  it('filters by property: exists (a null value is present), absent, and value as JSON scalar text', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const num = await createOrder(ctx(), t, f, { properties: { sage200Evo: { salesOrderNo: 456 } } });
    const str = await createOrder(ctx(), t, f, { properties: { sage200Evo: { salesOrderNo: '456' } } });
    const nul = await createOrder(ctx(), t, f, { properties: { sage200Evo: { salesOrderNo: null } } });
    const obj = await createOrder(ctx(), t, f, { properties: { sage200Evo: { salesOrderNo: { n: 456 } } } });
    const none = await createOrder(ctx(), t, f, { properties: { unleashed: { guid: '123' } } });
    const bare = await createOrder(ctx(), t, f);
    const path = '?propertyPath=sage200Evo.salesOrderNo';
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyExists=true`)), [obj.id, nul.id, str.id, num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, path)), [obj.id, nul.id, str.id, num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyExists=false`)), [bare.id, none.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyValue=456`)), [str.id, num.id]);
    assert.deepEqual(idsOf(await list(ctx(), t, `${path}&propertyValue=12345`)), []);
    assert.deepEqual(
      idsOf(await list(ctx(), t, `?phase=PENDING&status=UNASSIGNED${path.replace('?', '&')}&propertyExists=false`)),
      [bare.id, none.id],
    );
    assertBadRequest(await list(ctx(), t, '?propertyPath=a..b'), 'propertyPath');
  });

  it('reads deep pages of the unfiltered list by the created-day counts, the same pages as the sorted query, from either end', async () => {
    const t = await ctx().createTenant();
    // 13 orders over 5 days, several on a day, two at the same millisecond (the id breaks the tie).
    const times: Array<[string, string]> = [
      '2025-01-01T00:00:00.000Z',
      '2025-01-01T23:59:59.999Z',
      '2025-01-02T08:00:00.000Z',
      '2025-01-02T08:00:00.000Z',
      '2025-01-02T09:00:00.000Z',
      '2025-01-04T00:00:00.000Z',
      '2025-01-04T12:00:00.000Z',
      '2025-01-04T12:00:00.001Z',
      '2025-01-07T01:00:00.000Z',
      '2025-01-07T02:00:00.000Z',
      '2025-01-07T03:00:00.000Z',
      '2025-01-07T23:59:59.999Z',
      '2025-01-08T00:00:00.000Z',
    ].map((c) => [c, c]);
    const ids = await ordersAt(ctx(), t, times);
    await ctx().request('DELETE', `/api/v1/orders/${ids[5]}`, { as: t });
    const expected = (
      await ctx()
        .db.selectFrom('orders')
        .select(['id'])
        .where('business_id', '=', t.businessId)
        .where('deleted_at', 'is', null)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
    ).map((r) => r.id);
    assert.equal(expected.length, 12);
    const query = ctx().db.selectFrom('orders').where('business_id', '=', t.businessId).where('deleted_at', 'is', null);
    for (const limit of [1, 2, 5]) {
      for (let page = 1; page <= Math.ceil(expected.length / limit) + 1; page++) {
        const got = await walkingEveryDay(() =>
          pageByCreatedDay(
            ctx().db,
            t.businessId,
            query,
            { page, limit, includeDeleted: false, property: null, tuning: testListTuning },
            expected.length,
          ),
        );
        assert.deepEqual(got, expected.slice((page - 1) * limit, page * limit), `limit ${limit} page ${page}`);
      }
    }
    // By phase and status: the counts of that phase and status only. Three of the orders move to ACTIVE/ACCEPTED.
    for (const id of [ids[1], ids[6], ids[12]])
      await patchOrder(ctx(), t, id, { order: { phase: 'ACTIVE', status: 'ACCEPTED' } });
    const active = (
      await ctx()
        .db.selectFrom('orders')
        .select(['id'])
        .where('business_id', '=', t.businessId)
        .where('deleted_at', 'is', null)
        .where('phase', '=', 'ACTIVE')
        .where('status', '=', 'ACCEPTED')
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
    ).map((r) => r.id);
    assert.equal(active.length, 3);
    const byPhase = query.where('phase', '=', 'ACTIVE').where('status', '=', 'ACCEPTED');
    for (let page = 1; page <= 4; page++) {
      const got = await walkingEveryDay(() =>
        pageByCreatedDay(
          ctx().db,
          t.businessId,
          byPhase,
          {
            page,
            limit: 1,
            phase: 'ACTIVE',
            status: 'ACCEPTED',
            includeDeleted: false,
            property: null,
            tuning: testListTuning,
          },
          active.length,
        ),
      );
      assert.deepEqual(got, active.slice(page - 1, page), `ACTIVE/ACCEPTED page ${page}`);
    }
    // Through the API, whichever way the plan reads the page.
    for (let page = 1; page <= 5; page++) {
      assert.deepEqual(
        idsOf(await list(ctx(), t, `?limit=3&page=${page}`)),
        expected.slice((page - 1) * 3, page * 3),
        `API page ${page}`,
      );
    }
  });

  it('answers a page past the end from the total alone, without looking for its rows', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 3; i++) await createOrder(ctx(), t, f);
    const counter = await createQueryCounter(ctx(), t);
    const first = await counter.measure('/api/v1/orders?limit=2');
    const past = await counter.measure('/api/v1/orders?page=20000&limit=2');
    const last = await counter.measure('/api/v1/orders?page=2&limit=2');
    await counter.close();
    assert.equal(first.body.items.length, 2);
    assert.equal(last.body.items.length, 1, 'the last page, partly filled, is still read');
    assert.deepEqual({ items: past.body.items, total: past.body.total }, { items: [], total: 3 });
    assert.ok(first.n >= 3, `${first.n} queries for a first page`);
    assert.equal(past.n, 1, 'a page past the end reads its total, and nothing else');
  });

  it('reads nothing twice for one list: a changed-since split shares the path total, a total and page by day share the days', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const first = await createOrder(ctx(), t, f, { properties: { erp: { ref: 'R0' } } });
    for (let i = 1; i < 4; i++) await createOrder(ctx(), t, f, { properties: { erp: { ref: `R${i}` } } });
    await createOrder(ctx(), t, f);
    const counter = await createQueryCounter(ctx(), t);
    const since = encodeURIComponent('2000-01-01T00:00:00.000Z');
    // Within the day the orders were made: that day's count is read by query, once.
    const sameDay = encodeURIComponent(new Date(Date.parse(first.createdAt) - 1).toISOString());
    const lists = [
      ['propertyPath=erp.ref&propertyExists=true', 4],
      ['propertyPath=erp.ref&propertyExists=false', 1],
      ['propertyPath=erp.ref&propertyValue=R2', 1],
      [`propertyPath=erp.ref&propertyExists=true&updatedSince=${since}`, 4],
      [`propertyPath=erp.ref&propertyExists=false&updatedSince=${since}`, 1],
      [`propertyPath=erp.ref&propertyValue=R2&updatedSince=${since}`, 1],
      [`createdSince=${since}`, 5],
      [`createdSince=${sameDay}`, 5],
      [`propertyPath=erp.ref&propertyExists=true&createdSince=${sameDay}`, 4],
      ['', 5],
    ] as const;
    for (const [filter, total] of lists) {
      for (const page of [1, 2]) {
        // No matches few enough to collect (so that a changed-since list is split), and every page walked by day.
        const { queries, body } = await withListTuning({ fewCandidates: 0, shallowRows: 0 }, () =>
          counter.measure(`/api/v1/orders?${filter}&limit=2&page=${page}`),
        );
        assert.equal(body.total, total, filter);
        // A subquery built apart (the side table's matches) is inside each query that uses it.
        const run = queries.filter((q) => !queries.some((other) => other !== q && other.includes(q)));
        assert.ok(run.length >= 1, `${filter} page ${page}: no query`);
        const repeated = run.filter((q, i) => run.indexOf(q) !== i);
        assert.deepEqual(repeated, [], `${filter} page ${page}: a query ran twice`);
      }
    }
    await counter.close();
  });

  it('loads a page of 100 orders with their items in as many queries as a page of 3 (no N+1)', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 3; i++)
      await createOrder(ctx(), t, f, {
        orderItems: [
          { itemVariantId: f.variantIds[0], quantity: 1 },
          { itemVariantId: f.variantIds[1], quantity: 1 },
        ],
      });
    const counter = await createQueryCounter(ctx(), t);
    const run = () => counter.measure('/api/v1/orders?limit=100');
    const small = await run();
    for (let i = 0; i < 97; i++)
      await createOrder(ctx(), t, f, {
        orderItems: [
          { itemVariantId: f.variantIds[0], quantity: 1 },
          { itemVariantId: f.variantIds[1], quantity: 1 },
        ],
      });
    const large = await run();
    await counter.close();
    assert.equal(large.body.items.length, 100);
    assert.ok(large.body.items.every((o: any) => o.orderItems.length === 2));
    assert.equal(large.n, small.n);
    // Count, page ids, their versions, the rows not rendered yet (all, with the cache off), their items.
    assert.ok(large.n >= 3 && large.n <= 5, `${large.n} queries`);
  });
});

describeEachBackend('GET /api/v1/orders/:id', (ctx) => {
  securityCases(ctx, {
    method: 'GET',
    url: async (c, owner) => `/api/v1/orders/${(await createOrder(c, owner, await createFixture(c, owner))).id}`,
  });

  it('returns the order with an ETag of its version; 404 Order not found when missing or deleted', async () => {
    const t = await ctx().createTenant();
    const o = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const got = await getOrder(ctx(), t, o.id);
    assert.equal(got.status, 200);
    assert.equal(got.headers.etag, '"1"');
    await patchOrder(ctx(), t, o.id, { order: { notes: 'x' } });
    assert.equal((await getOrder(ctx(), t, o.id)).headers.etag, '"2"');
    const missing = await getOrder(ctx(), t, 'ord_missing');
    assert.deepEqual(
      [missing.status, missing.body.errorCode, missing.body.message, missing.body.error],
      [404, 'NOT_FOUND', 'Order not found', 'Order not found'],
    );
    await ctx().request('DELETE', `/api/v1/orders/${o.id}`, { as: t });
    assert.equal((await getOrder(ctx(), t, o.id)).body.message, 'Order not found');
  });
});

describeEachBackend('DELETE /api/v1/orders/:id', (ctx) => {
  securityCases(ctx, {
    method: 'DELETE',
    url: async (c, owner) => `/api/v1/orders/${(await createOrder(c, owner, await createFixture(c, owner))).id}`,
  });

  it('soft-deletes: 204 without a body, the row kept with deletedAt and phase DELETED, then 404 everywhere', async () => {
    const t = await ctx().createTenant();
    const o = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const res = await ctx().request('DELETE', `/api/v1/orders/${o.id}`, { as: t });
    assert.equal(res.status, 204);
    assert.equal(res.body, undefined);
    const row = await ctx().db.selectFrom('orders').selectAll().where('id', '=', o.id).executeTakeFirstOrThrow();
    assert.equal(row.phase, 'DELETED');
    assert.ok(row.deleted_at);
    assert.equal(Number(row.version), 2);
    assert.equal((await getOrder(ctx(), t, o.id)).status, 404);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${o.id}`, { as: t })).status, 404);
    const patch = await patchOrder(ctx(), t, o.id, { order: { notes: 'x' } });
    assert.deepEqual([patch.status, patch.body.message], [404, 'Order not found']);
  });
});
