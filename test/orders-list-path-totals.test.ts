import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import { listOrders, type ListOrdersOptions } from '../src/orders/list-repository.ts';
import { describeEachBackend } from './helpers/context.ts';
import { createOrders, expectedIds, NO_FILTER, PATH, UPDATED_SINCE } from './helpers/list-fixture.ts';

/**
 * A list by a present path reads the path's counts once, per phase and status
 * (src/orders/list-repository.ts propertyCounts): their sum decides the plan, and their phase and
 * status's share is the total. Before, it read them twice, by two sums.
 */

/**
 * A plugin that keeps each executed statement's tree as JSON, to see which tables a list read.
 * Subqueries are transformed too, under ids of their own; only the statements that return a
 * result are kept.
 */
function recording(): { plugin: KyselyPlugin; statements: string[] } {
  const statements: string[] = [];
  const trees = new WeakMap<object, string>();
  return {
    statements,
    plugin: {
      transformQuery: ({ node, queryId }) => {
        trees.set(queryId, JSON.stringify(node));
        return node;
      },
      transformResult: async ({ result, queryId }) => {
        statements.push(trees.get(queryId) ?? '');
        return result;
      },
    },
  };
}

describeEachBackend("GET /api/v1/orders: a present path's counts", (ctx) => {
  it('are read once per list, and give its exact total of a phase and status', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    const cases: Array<Partial<ListOrdersOptions>> = [
      { phase: 'ACTIVE' }, { status: 'ACCEPTED' }, { phase: 'ACTIVE', status: 'ACCEPTED' }, { status: 'UNASSIGNED', includeDeleted: true },
      { phase: 'ACTIVE', updatedSince: UPDATED_SINCE }, {},
    ];
    for (const extra of cases) {
      const options: ListOrdersOptions = { ...NO_FILTER, page: 1, limit: 3, property: { segments: PATH, exists: true }, ...extra };
      const { plugin, statements } = recording();
      const page = await listOrders(ctx().db.withPlugin(plugin), t.businessId, options);
      const expected = await expectedIds(ctx(), t, options);
      assert.equal(page.total, expected.length, JSON.stringify(extra));
      assert.deepEqual(page.items.map((o) => o.id), expected.slice(0, 3), JSON.stringify(extra));
      const countReads = statements.filter((s) => s.includes('property_counts'));
      assert.equal(countReads.length, 1, `${JSON.stringify(extra)}: ${countReads.length} reads of the path's counts`);
    }
  });
});
