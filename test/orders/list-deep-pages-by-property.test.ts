import assert from 'node:assert/strict';
import { it } from 'node:test';
import { nearerEnd } from '../../src/db/list.ts';
import { listOrders, type ListOrdersOptions } from '../../src/orders/read-model/list.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { expectedIds, NO_FILTER } from '../helpers/list-fixture.ts';
import { createFixture, createOrder, withListTuning, testListTuning } from '../helpers/orders.ts';
import { recordingStatements } from '../helpers/statements.ts';

/**
 * A walk from a list's end by a path (present or absent) reads at most a bounded reach of the
 * list's rows without the path (src/orders/read-model/days.ts idsByDays): where the path's orders lie
 * further, it reads the day counts and passes the days without them. Before, a path that only the
 * oldest 20,000 of 1M orders had made its first page read nearly every row (331 ms on PostgreSQL).
 */

const ORDERS = 30;
/** Only the oldest four have it. */
const OLD = { segments: ['legacy', 'id'] };
/** Only the newest three have it. */
const NEW = { segments: ['fresh', 'id'] };
/** All but the oldest four have it. */
const MOST = { segments: ['erp', 'no'] };
/** The 4th and the 13th newest have it: one inside the reach of a first page of 2 (8 rows), one past it. */
const EDGE = { segments: ['edge', 'id'] };

/** The four orders tied on one created time have it: the reach of a first page of 2 (8 rows) ends among them. */
const TIED = { segments: ['tied', 'id'] };

/** Statements that read created days (the day counts), not rows. */
const dayReads = (trees: unknown[]) => trees.filter((tree) => JSON.stringify(tree).includes('"day"'));

interface Case {
  filter: ListOrdersOptions['property'];
  /** The end of the list its orders lie far from (past the reach of a page of 2 walked from it); `any` where other reads name days too. */
  far: 'newest' | 'oldest' | 'neither' | 'any';
  extra?: Partial<ListOrdersOptions>;
}

const CASES: Case[] = [
  { filter: { ...OLD, exists: true }, far: 'newest' },
  { filter: { ...MOST, exists: false }, far: 'newest' },
  { filter: { ...NEW, exists: true }, far: 'oldest' },
  { filter: { ...NEW, exists: false }, far: 'neither' },
  { filter: { ...MOST, exists: true }, far: 'neither' },
  { filter: { ...EDGE, exists: true }, far: 'newest' },
  // Two of the four tied orders inside the reach from the newest end: which two, the id decides.
  { filter: { ...TIED, exists: true }, far: 'oldest' },
  { filter: { ...OLD, exists: true }, far: 'newest', extra: { status: 'ACCEPTED' } },
  { filter: { ...OLD, exists: true }, far: 'newest', extra: { phase: 'PENDING' } },
  { filter: { ...OLD, exists: true }, far: 'newest', extra: { includeDeleted: true } },
  // The deleted oldest order is the last page's, inside the reach from that end.
  { filter: { ...MOST, exists: false }, far: 'newest', extra: { includeDeleted: true } },
  { filter: { ...NEW, exists: true }, far: 'oldest', extra: { includeDeleted: true } },
  // After the oldest order's creation (createdSince's own day counted by query). Its total sums the days.
  { filter: { ...OLD, exists: true }, far: 'any', extra: { createdSince: '2025-01-01T12:00:00.000Z' } },
  // Every order changed after u: the recent part of the split, planned as a createdSince list; its older part reads days too.
  { filter: { ...OLD, exists: true }, far: 'any', extra: { updatedSince: '2024-12-31T00:00:00.000Z' } },
];

describeEachBackend('GET /api/v1/orders: a walk from the end by a path', (ctx) => {
  it('reads the day counts only when the path lies past its reach, and answers as brute force on every page', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < ORDERS; i++) {
      const properties: Record<string, unknown> = {};
      if (i < 4) properties.legacy = { id: i };
      else properties.erp = { no: i };
      if (i >= ORDERS - 3) properties.fresh = { id: i };
      if (i === ORDERS - 4 || i === ORDERS - 13) properties.edge = { id: i };
      if (i >= 20 && i <= 23) properties.tied = { id: i };
      const body = {
        properties,
        ...(i % 2 === 1 ? { status: 'ACCEPTED' } : {}),
        ...(i % 3 !== 0 ? { phase: 'PENDING' } : {}),
      };
      const { id } = await createOrder(ctx(), t, f, body);
      // A day each, oldest first; four orders created at one time, tied on it.
      const created = new Date(Date.UTC(2025, 0, 1 + (i >= 20 && i <= 23 ? 20 : i), 12)).toISOString();
      await ctx()
        .db.updateTable('orders')
        .set({ created_at: created, updated_at: created })
        .where('id', '=', id)
        .execute();
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    // The oldest order deleted, through the API: with includeDeleted, the deleted orders' tables too.
    const [{ id: deleted }] = await ctx()
      .db.selectFrom('orders')
      .select('id')
      .where('business_id', '=', t.businessId)
      .orderBy('created_at')
      .limit(1)
      .execute();
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${deleted}`, { as: t })).status, 204);
    // A reach of 8 rows for a first page of 2 (shallowRows 4, or 4 times the rows read); none few enough to collect.
    await withListTuning({ shallowRows: 4, fewCandidates: -1 }, async () => {
      for (const { filter, far, extra } of CASES) {
        for (const limit of [1, 2]) {
          const base: ListOrdersOptions = { ...NO_FILTER, page: 1, limit, property: filter, ...extra };
          const expected = await expectedIds(ctx(), t, base);
          const pages = Math.ceil(expected.length / limit);
          for (let page = 1; page <= pages + 1; page++) {
            const what = `${JSON.stringify(filter)} ${JSON.stringify(extra ?? {})} limit ${limit} page ${page} of ${pages}`;
            const { plugin, trees } = recordingStatements();
            const listed = await listOrders(ctx().db.withPlugin(plugin), t.businessId, {
              ...base,
              page,
              tuning: testListTuning,
            });
            assert.equal(listed.total, expected.length, what);
            assert.deepEqual(
              listed.items.map((o) => o.id),
              expected.slice((page - 1) * limit, page * limit),
              what,
            );
            // Pages of 2 walked from an end (src/db/list.ts nearerEnd: from the oldest when past the middle).
            const { backwards, skip } = nearerEnd(expected.length, { page, limit });
            if (limit !== 2 || far === 'any' || skip !== 0 || page > pages) continue;
            const pastReach = far === (backwards ? 'oldest' : 'newest');
            assert.equal(dayReads(trees).length > 0, pastReach, `${what}: ${dayReads(trees).length} reads of the days`);
          }
        }
      }
    });
  });
});
