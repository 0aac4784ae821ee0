import assert from 'node:assert/strict';
import { it } from 'node:test';
import { listOrders, type ListOrdersOptions } from '../../src/orders/read-model/list.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { recordingStatements } from '../helpers/statements.ts';
import { withListTuning, testListTuning } from '../helpers/orders.ts';
import { DEFAULT_LIST_TUNING } from '../../src/orders/read-model/index.ts';
import { createOrders, expectedIds, NO_FILTER, PATH, UPDATED_SINCE } from '../helpers/list-fixture.ts';

/**
 * A list by a present path reads the path's counts once, per phase and status, when it has a phase
 * or status (src/orders/read-model/list.ts propertyCounts): their sum decides the plan, and the
 * share of its phase and status is its total. Before, it read them twice, by two sums.
 */

describeEachBackend("GET /api/v1/orders: a present path's counts", (ctx) => {
  it('are read once per list of a phase or status, and give its exact total', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    const cases: Array<Partial<ListOrdersOptions>> = [
      { phase: 'ACTIVE' },
      { status: 'ACCEPTED' },
      { phase: 'ACTIVE', status: 'ACCEPTED' },
      { status: 'UNASSIGNED', includeDeleted: true },
    ];
    // As shipped (few matches: collected from the side table), and with none few enough (the
    // total from the counts, the page walked): either way the counts are read once.
    for (const fewCandidates of [DEFAULT_LIST_TUNING.fewCandidates, -1]) {
      await withListTuning({ fewCandidates }, async () => {
        for (const extra of cases) {
          const options: ListOrdersOptions = {
            ...NO_FILTER,
            page: 1,
            limit: 3,
            property: { segments: PATH, exists: true },
            ...extra,
          };
          const { plugin, trees } = recordingStatements();
          const page = await listOrders(ctx().db.withPlugin(plugin), t.businessId, {
            ...options,
            tuning: testListTuning,
          });
          const what = `${JSON.stringify(extra)}, fewCandidates ${fewCandidates}`;
          const expected = await expectedIds(ctx(), t, options);
          assert.equal(page.total, expected.length, what);
          assert.deepEqual(
            page.items.map((o) => o.id),
            expected.slice(0, 3),
            what,
          );
          const countReads = trees.filter((tree) => JSON.stringify(tree).includes('property_counts'));
          assert.equal(countReads.length, 1, `${what}: ${countReads.length} reads of the path's counts`);
        }
      });
    }
  });

  it('are handed to the recent part of a changed-since list, which gives the brute-force total and pages', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    for (const extra of [{ phase: 'ACTIVE' }, { status: 'ACCEPTED', includeDeleted: true }, {}]) {
      const base: ListOrdersOptions = {
        ...NO_FILTER,
        page: 1,
        limit: 2,
        property: { segments: PATH, exists: true },
        updatedSince: UPDATED_SINCE,
        ...extra,
      };
      const expected = await expectedIds(ctx(), t, base);
      // No candidates few enough: the list is split at its updatedSince.
      await withListTuning({ fewCandidates: -1 }, async () => {
        for (let page = 1; page <= Math.ceil(expected.length / 2) + 1; page++) {
          const listed = await listOrders(ctx().db, t.businessId, { ...base, page, tuning: testListTuning });
          assert.equal(listed.total, expected.length, `${JSON.stringify(extra)} page ${page}`);
          assert.deepEqual(
            listed.items.map((o) => o.id),
            expected.slice((page - 1) * 2, page * 2),
            `${JSON.stringify(extra)} page ${page}`,
          );
        }
      });
    }
  });
});
