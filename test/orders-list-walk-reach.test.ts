import assert from 'node:assert/strict';
import { it } from 'node:test';
import { listOrders, type ListOrdersOptions } from '../src/orders/list-repository.ts';
import { rebuildOrderProjections } from '../src/orders/projections/index.ts';
import { describeEachBackend } from './helpers/context.ts';
import { expectedIds, NO_FILTER } from './helpers/list-fixture.ts';
import { createFixture, createOrder, withListTuning } from './helpers/orders.ts';
import { recordingStatements } from './helpers/statements.ts';

/**
 * A walk from a list's end by a path (present or absent) reads at most a bounded reach of the
 * list's rows without the path (src/orders/list-days.ts idsByDays): where the path's orders lie
 * further, it reads the day counts and passes the days without them. Before, a path that only the
 * oldest 20,000 of 1M orders had made its first page read nearly every row (382 ms on PostgreSQL).
 */

const ORDERS = 30;
/** Only the oldest three have it. */
const OLD = { segments: ['legacy', 'id'] };
/** Only the newest three have it. */
const NEW = { segments: ['fresh', 'id'] };
/** All but the oldest three have it. */
const MOST = { segments: ['erp', 'no'] };

/** Statements that read created days (the day counts), not rows. */
const dayReads = (trees: unknown[]) => trees.filter((tree) => JSON.stringify(tree).includes('"day"'));

describeEachBackend('GET /api/v1/orders: a walk from the end by a path', (ctx) => {
  it('reads the day counts only when the path lies past its reach, and answers as brute force on every page', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < ORDERS; i++) {
      const properties: Record<string, unknown> = {};
      if (i < 3) properties.legacy = { id: i };
      else properties.erp = { no: i };
      if (i >= ORDERS - 3) properties.fresh = { id: i };
      const { id } = await createOrder(ctx(), t, f, { properties, ...(i % 2 === 0 ? { status: 'ACCEPTED' } : {}) });
      // A day each, oldest first.
      const created = new Date(Date.UTC(2025, 0, 1 + i, 12)).toISOString();
      await ctx().db.updateTable('orders').set({ created_at: created, updated_at: created }).where('id', '=', id).execute();
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    // One of the oldest three deleted, through the API: with includeDeleted, the deleted orders' tables too.
    const [{ id: deleted }] = await ctx().db.selectFrom('orders').select('id').where('business_id', '=', t.businessId)
      .orderBy('created_at').offset(1).limit(1).execute();
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${deleted}`, { as: t })).status, 204);
    // A reach of 8 rows for a first page of 2 (shallowRows 4, or 4 times the rows read); none few enough to collect.
    await withListTuning({ shallowRows: 4, fewCandidates: -1 }, async () => {
      const cases: Array<{ filter: ListOrdersOptions['property']; far: 'first' | 'last' | 'neither'; status?: string; includeDeleted?: boolean }> = [
        { filter: { ...OLD, exists: true }, far: 'first' },
        { filter: { ...MOST, exists: false }, far: 'first' },
        { filter: { ...NEW, exists: true }, far: 'last' },
        { filter: { ...NEW, exists: false }, far: 'neither' },
        { filter: { ...MOST, exists: true }, far: 'neither' },
        { filter: { ...OLD, exists: true }, far: 'first', status: 'ACCEPTED' },
        { filter: { ...OLD, exists: true }, far: 'first', includeDeleted: true },
        { filter: { ...MOST, exists: false }, far: 'first', includeDeleted: true },
        { filter: { ...NEW, exists: true }, far: 'last', includeDeleted: true },
      ];
      for (const { filter, far, status, includeDeleted = false } of cases) {
        const base: ListOrdersOptions = { ...NO_FILTER, status, includeDeleted, page: 1, limit: 2, property: filter };
        const expected = await expectedIds(ctx(), t, base);
        const pages = Math.ceil(expected.length / 2);
        for (const page of [1, pages]) {
          const what = `${JSON.stringify(filter)}${status ? ` ${status}` : ''}${includeDeleted ? ' includeDeleted' : ''} page ${page} of ${pages}`;
          const { plugin, trees } = recordingStatements();
          const listed = await listOrders(ctx().db.withPlugin(plugin), t.businessId, { ...base, page });
          assert.equal(listed.total, expected.length, what);
          assert.deepEqual(listed.items.map((o) => o.id), expected.slice((page - 1) * 2, page * 2), what);
          // A single page is read from the start (src/db/list.ts nearerEnd), the others past the middle backwards.
          const farEnd = (far === 'first' && page === 1) || (far === 'last' && page === pages && pages > 1);
          assert.equal(dayReads(trees).length > 0, farEnd, `${what}: ${dayReads(trees).length} reads of the days`);
        }
      }
    });
  });
});
