import assert from 'node:assert/strict';
import { it } from 'node:test';
import { listOrders, type ListOrdersOptions } from '../../src/orders/read-model/list.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { expectedIds, NO_FILTER, PATH } from '../helpers/list-fixture.ts';
import { createFixture, createOrder, withListTuning, testListTuning } from '../helpers/orders.ts';

/**
 * Changed-since lists against brute force over a scattered history (src/orders/read-model/runs.ts
 * dayRuns, idsByRuns): older orders on 24 days spread over 300 days (more than the 16 runs, so
 * the closest are joined), adjacent days, orders at u, a millisecond either side of it and tied,
 * soft-deleted ones; every page forwards and backwards, at several limits, with the walks forced
 * and as shipped. Seeded: SEED, U and PER vary it by hand.
 */
let seed = Number(process.env.SEED ?? 12345);
const rnd = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const U = process.env.U ?? '2025-06-15T12:34:56.789Z';
const uMs = Date.parse(U);
const DAY = 86_400_000;

describeEachBackend('GET /api/v1/orders changed since u, over a scattered history', (ctx) => {
  it('every page forwards and backwards matches brute force', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const layout: Array<{ created: string; updated: string; phase: string; path: boolean; deleted?: string }> = [];
    // 24 days, most far apart (more than 16 runs), some adjacent
    const dayOffsets = [
      -300, -280, -260, -250, -240, -220, -200, -190, -170, -150, -140, -120, -100, -90, -70, -50, -40, -30, -21, -14,
      -8, -7, -6, -1,
    ];
    for (const off of dayOffsets) {
      const n = 1 + Math.floor(rnd() * Number(process.env.PER ?? 3));
      for (let i = 0; i < n; i++) {
        const created = new Date(Math.floor((uMs + off * DAY) / DAY) * DAY + Math.floor(rnd() * DAY)).toISOString();
        const changed = rnd() < 0.6;
        const updated = changed ? new Date(uMs + 1 + Math.floor(rnd() * 5 * DAY)).toISOString() : created;
        layout.push({
          created,
          updated,
          phase: rnd() < 0.5 ? 'ACTIVE' : 'PENDING',
          path: rnd() < 0.5,
          deleted: changed && rnd() < 0.15 ? updated : undefined,
        });
      }
    }
    // u's own day: before u, at u, u+1ms, after u; ties
    for (const c of [
      new Date(Math.floor(uMs / DAY) * DAY).toISOString(),
      '2025-06-15T10:00:00.000Z',
      U,
      U,
      new Date(uMs + 1).toISOString(),
      new Date(uMs - 1).toISOString(),
      '2025-06-15T20:00:00.000Z',
      '2025-06-16T01:00:00.000Z',
      '2025-06-18T01:00:00.000Z',
    ]) {
      const updated = new Date(Math.max(Date.parse(c), uMs) + 1 + Math.floor(rnd() * DAY)).toISOString();
      layout.push({ created: c, updated, phase: rnd() < 0.5 ? 'ACTIVE' : 'PENDING', path: rnd() < 0.5 });
    }
    // older on u's day not changed
    layout.push({ created: new Date(uMs - 3600_000).toISOString(), updated: U, phase: 'ACTIVE', path: true });
    for (const o of layout) {
      const { id } = await createOrder(ctx(), t, f, {
        phase: o.phase,
        ...(o.path ? { properties: { erp: { no: 1 } } } : {}),
      });
      await ctx()
        .db.updateTable('orders')
        .set({ created_at: o.created, updated_at: o.updated, ...(o.deleted ? { deleted_at: o.deleted } : {}) })
        .where('id', '=', id)
        .execute();
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    const filters: Array<Partial<ListOrdersOptions>> = [
      {},
      { includeDeleted: true },
      { phase: 'ACTIVE' },
      { property: { segments: PATH, exists: true } },
      { includeDeleted: true, phase: 'PENDING' },
      { createdSince: '2025-03-01T00:00:00.000Z' },
      { modifiedSince: U, updatedSince: undefined },
    ];
    const failures: string[] = [];
    for (const tuning of [{ shallowRows: 0, fewCandidates: -1 }, {}]) {
      await withListTuning(tuning, async () => {
        for (const extra of filters) {
          for (const limit of [1, 2, 3, 7]) {
            const base = {
              ...NO_FILTER,
              page: 1,
              limit,
              property: null,
              updatedSince: U,
              ...extra,
            } as ListOrdersOptions;
            const expected = await expectedIds(ctx(), t, base);
            for (let page = 1; page <= Math.ceil(expected.length / limit) + 1; page++) {
              const listed = await listOrders(ctx().db, t.businessId, { ...base, page, tuning: testListTuning });
              const what = `${JSON.stringify(tuning)} ${JSON.stringify(extra)} limit ${limit} page ${page}`;
              if (listed.total !== expected.length)
                failures.push(`${what}: total ${listed.total} vs ${expected.length}`);
              const got = listed.items.map((o) => o.id),
                want = expected.slice((page - 1) * limit, page * limit);
              if (JSON.stringify(got) !== JSON.stringify(want))
                failures.push(`${what}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
            }
          }
        }
      });
    }
    assert.deepEqual(failures.slice(0, 20), []);
  });
});
