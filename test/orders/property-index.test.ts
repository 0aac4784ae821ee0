import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { sql } from 'kysely';
import { propertyCondition } from '../../src/db/list.ts';
import { canonicalNumber, propertyPaths } from '../../src/orders/read-model/property-values.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';

const PATHS = [
  'a',
  'a.b',
  'a.b.c',
  'a.x',
  'sage200Evo',
  'sage200Evo.salesOrderNo',
  'n',
  'flag',
  'tags',
  'tags.0',
  'k-1',
  'deep.l1.l2.l3',
  'missing',
];
const VALUES = [
  '456',
  '456.0',
  '4.56e2',
  '0456',
  'true',
  'false',
  'null',
  'x',
  'abc',
  '0',
  '-0',
  '1e21',
  '0.1',
  '0.10',
  '1',
  '-3.5',
  'Completed',
];

/**
 * Every property filter through the API, against the JSON functions (the implementation the side
 * table replaces) run directly on the orders table: the same ids in the same order, the same total.
 */
async function assertFiltersExact(ctx: TestContext, t: Tenant) {
  const { db } = ctx;
  const brute = async (filter: { segments: string[]; value?: string; exists?: boolean }, phase?: string) => {
    let query = db
      .selectFrom('orders')
      .select('id')
      .where('business_id', '=', t.businessId)
      .where('deleted_at', 'is', null);
    if (phase) query = query.where('phase', '=', phase);
    const rows = await query
      .where(propertyCondition(db, sql.ref('properties'), filter))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map((r) => r.id);
  };
  const check = async (query: string, filter: { segments: string[]; value?: string; exists?: boolean }) => {
    // Alone (side-table totals and pages) and with a phase (side-table conditions inside the orders query).
    for (const phase of [undefined, 'PENDING']) {
      const expected = await brute(filter, phase);
      const q = phase ? `${query}&phase=${phase}` : query;
      const res = await ctx.request('GET', `/api/v1/orders?limit=100&${q}`, { as: t });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.items.map((o: { id: string }) => o.id),
        expected.slice(0, 100),
        q,
      );
      assert.equal(res.body.total, expected.length, `total of ${q}`);
    }
  };
  for (const path of PATHS) {
    const segments = path.split('.');
    await check(`propertyPath=${path}&propertyExists=true`, { segments, exists: true });
    await check(`propertyPath=${path}&propertyExists=false`, { segments, exists: false });
    for (const value of VALUES)
      await check(`propertyPath=${path}&propertyValue=${encodeURIComponent(value)}`, { segments, value });
  }
  // The side table itself: exactly the paths of each live order's properties, counts per path equal to the rows.
  const live = await db
    .selectFrom('orders')
    .select(['id', 'properties'])
    .where('business_id', '=', t.businessId)
    .where('deleted_at', 'is', null)
    .execute();
  const expectedRows = live
    .flatMap((o) => propertyPaths(o.properties).map((p) => `${o.id} ${p.path} ${p.value}`))
    .sort();
  const rows = await db
    .selectFrom('order_properties')
    .select(['order_id', 'path', 'value'])
    .where('business_id', '=', t.businessId)
    .execute();
  assert.deepEqual(rows.map((r) => `${r.order_id} ${r.path} ${r.value}`).sort(), expectedRows);
  const perPath = new Map<string, number>();
  for (const r of rows) perPath.set(r.path, (perPath.get(r.path) ?? 0) + 1);
  const counts = await db
    .selectFrom('order_property_counts')
    .select(['path', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', t.businessId)
    .groupBy('path')
    .execute();
  assert.deepEqual(
    counts
      .filter((c) => Number(c.n) !== 0)
      .map((c) => `${c.path}=${Number(c.n)}`)
      .sort(),
    [...perPath].map(([p, n]) => `${p}=${n}`).sort(),
  );
}

describeEachBackend('order property side index', (ctx) => {
  it('canonical numbers are exact decimal forms', () => {
    assert.equal(canonicalNumber('456'), '456e0');
    assert.equal(canonicalNumber('456.0'), '456e0');
    assert.equal(canonicalNumber('4.56e2'), '456e0');
    assert.equal(canonicalNumber('45600'), '456e2');
    assert.equal(canonicalNumber('0.10'), '1e-1');
    assert.equal(canonicalNumber('-0'), '0e0');
    assert.equal(canonicalNumber('0.000'), '0e0');
    assert.equal(canonicalNumber('1e+21'), '1e21');
  });

  it('matches the JSON functions after creates, PATCHes (nulls, nesting, replacement), deletes and concurrent PATCHes', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), other, await createFixture(ctx(), other), { properties: { a: { b: 456 } } });
    const shapes: Array<Record<string, unknown> | null> = [
      { a: { b: 456 } },
      { a: { b: '456' } },
      { a: { b: null } },
      { a: { b: { c: 456 } } },
      { a: 1 },
      { sage200Evo: { salesOrderNo: 456, syncedAt: '2025-01-01T00:00:00.000Z' }, warehouse: { bay: null } },
      { sage200Evo: { salesOrderNo: null }, unleashed: { status: 'Completed' } },
      { n: 0.1, flag: true, tags: ['x', 456], 'k-1': 'x' },
      { n: 1e21, flag: false, tags: [] },
      { n: -0, x: 'true', 'bad key': { b: 1 }, deep: { l1: { l2: { l3: '1' } } } },
      { n: 456, a: { x: 'abc', b: true } },
      { a: { b: 4.56e2 }, n: -3.5 },
      null,
      {},
    ];
    const orders = [];
    for (const [i, properties] of shapes.entries()) {
      orders.push(
        await createOrder(ctx(), t, f, {
          ...(properties !== null && { properties }),
          ...(i % 3 === 0 && { phase: 'ACTIVE' }),
        }),
      );
    }
    await assertFiltersExact(ctx(), t);

    // PATCH merges: a new nested key, a scalar replaced by an object and back, values set to null.
    const patches: Array<[number, Record<string, unknown>]> = [
      [0, { a: { x: 'abc' } }],
      [1, { a: { b: { c: 456 } } }],
      [3, { a: { b: 456 } }],
      [4, { a: { b: null } }],
      [5, { sage200Evo: { salesOrderNo: null } }],
      [6, { sage200Evo: { salesOrderNo: '0456' } }],
      [7, { tags: { 0: 'x' }, flag: null }],
      [12, { missing: null }],
      [13, { deep: { l1: { l2: { l3: 1 } } } }],
    ];
    for (const [i, properties] of patches) {
      const res = await patchOrder(ctx(), t, orders[i].id, { order: { properties } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    await assertFiltersExact(ctx(), t);

    // Soft deletes take the order out of every filter and count.
    for (const i of [2, 10])
      assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[i].id}`, { as: t })).status, 204);
    await assertFiltersExact(ctx(), t);

    // Concurrent PATCHes of one order and of different orders.
    const writes = [];
    for (let i = 0; i < 10; i++) {
      writes.push(
        patchOrder(ctx(), t, orders[0].id, {
          order: { properties: { a: { b: i % 2 === 0 ? i : null, [`k${i}`]: i } } },
        }),
      );
      writes.push(patchOrder(ctx(), t, orders[8 + (i % 4)].id, { order: { properties: { n: i, flag: i % 3 === 0 } } }));
    }
    writes.push(ctx().request('DELETE', `/api/v1/orders/${orders[9].id}`, { as: t }));
    const results = await Promise.all(writes);
    assert.ok(
      results.every((r) => [200, 204, 404].includes(r.status)),
      JSON.stringify(results.map((r) => r.status)),
    );
    await assertFiltersExact(ctx(), t);

    // With includeDeleted the JSON functions answer (deleted orders are not in the side table).
    const all = await ctx().request('GET', '/api/v1/orders?includeDeleted=true&propertyPath=a.b', { as: t });
    const expected = await ctx()
      .db.selectFrom('orders')
      .select('id')
      .where('business_id', '=', t.businessId)
      .where(propertyCondition(ctx().db, sql.ref('properties'), { segments: ['a', 'b'] }))
      .execute();
    assert.equal(all.body.total, expected.length);
  });
});

describeEachBackend('order property side index: long values', (ctx) => {
  it('stores a string of any length, and a propertyValue filter still finds it exactly', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    // 4,000 random characters: past PostgreSQL's b-tree entry limit (about 2.7 kB), even compressed.
    const long = randomBytes(3000).toString('base64');
    // 1,000 two-byte characters: the longest a filter takes is 1,024 characters.
    const wide = 'é'.repeat(1000);
    const a = await createOrder(ctx(), t, f, { properties: { note: long } });
    const b = await createOrder(ctx(), t, f, { properties: { note: wide } });
    const c = await createOrder(ctx(), t, f, { properties: { note: `${wide.slice(1)}e` } });
    const patched = await patchOrder(ctx(), t, c.id, { order: { properties: { note: wide.slice(1) } } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const list = async (q: string) => {
      const res = await ctx().request('GET', `/api/v1/orders?${q}`, { as: t });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return { total: res.body.total, ids: res.body.items.map((o: { id: string }) => o.id).sort() };
    };
    assert.deepEqual(await list('propertyPath=note'), { total: 3, ids: [a.id, b.id, c.id].sort() });
    assert.deepEqual(await list(`propertyPath=note&propertyValue=${encodeURIComponent(wide)}`), {
      total: 1,
      ids: [b.id],
    });
    assert.deepEqual(await list(`propertyPath=note&propertyValue=${encodeURIComponent(wide.slice(1))}`), {
      total: 1,
      ids: [c.id],
    });
    assert.deepEqual(await list(`propertyPath=note&propertyValue=${encodeURIComponent(wide.slice(2))}`), {
      total: 0,
      ids: [],
    });
    await assertFiltersExact(ctx(), t);
  });
});
