import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dayRuns } from '../../src/orders/read-model/runs.ts';
import { listOrders, type ListOrdersOptions } from '../../src/orders/read-model/list.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { recordingStatements } from '../helpers/statements.ts';
import { expectedIds, NO_FILTER, PATH, UPDATED_SINCE } from '../helpers/list-fixture.ts';
import { createFixture, createOrder, withListTuning, testListTuning } from '../helpers/orders.ts';

/**
 * The older part of a changed-since list (orders created at or before u and changed after it)
 * reads only the created days that hold such orders (src/orders/read-model/list.ts olderOf). One
 * old order changed after u once made it read every order created since that order's day.
 */

describe('dayRuns', () => {
  it('joins days at most the gap apart, and keeps the others apart', () => {
    assert.deepEqual(dayRuns(['2025-01-05', '2025-02-20', '2025-02-21', '2025-02-27', '2025-03-01'], { gapDays: 7 }), [
      { from: '2025-01-05T00:00:00.000Z', to: '2025-01-06T00:00:00.000Z' },
      { from: '2025-02-20T00:00:00.000Z', to: '2025-03-02T00:00:00.000Z' },
    ]);
    assert.deepEqual(dayRuns([]), []);
    // The last run ends at `through`, included, when that is earlier than the end of its day.
    assert.deepEqual(dayRuns(['2025-02-27', '2025-03-01'], { through: '2025-03-01T12:00:00.000Z' }), [
      { from: '2025-02-27T00:00:00.000Z', to: '2025-03-01T12:00:00.000Z', toIncluded: true },
    ]);
    // Days in any order, or twice, make the same runs.
    assert.deepEqual(dayRuns(['2025-02-20', '2025-01-05', '2025-02-20']), dayRuns(['2025-01-05', '2025-02-20']));
  });

  it('joins the closest runs first when there are too many', () => {
    const runs = dayRuns(['2025-01-01', '2025-01-20', '2025-01-30', '2025-03-30'], { gapDays: 1, most: 2 });
    assert.deepEqual(runs, [
      { from: '2025-01-01T00:00:00.000Z', to: '2025-01-31T00:00:00.000Z' },
      { from: '2025-03-30T00:00:00.000Z', to: '2025-03-31T00:00:00.000Z' },
    ]);
  });
});

type Tree = { kind?: string; [key: string]: unknown };

/** The created_at comparisons of one SELECT's own WHERE (not of its subqueries), as [operator, value]. */
function createdBounds(where: unknown, out: Array<[string, string]> = []): Array<[string, string]> {
  if (!where || typeof where !== 'object') return out;
  const node = where as Tree;
  if (node.kind === 'SelectQueryNode') return out;
  if (node.kind === 'BinaryOperationNode') {
    const left = JSON.stringify(node.leftOperand);
    const value = (node.rightOperand as Tree)?.value;
    if (left.includes('"created_at"') && typeof value === 'string')
      out.push([(node.operator as { operator: string }).operator, value]);
  }
  for (const child of Object.values(node)) createdBounds(child, out);
  return out;
}

/** Every SELECT in the statements, with its created_at bounds. */
function selects(tree: unknown, out: Array<Array<[string, string]>> = []): Array<Array<[string, string]>> {
  if (!tree || typeof tree !== 'object') return out;
  const node = tree as Tree;
  if (node.kind === 'SelectQueryNode') out.push(createdBounds(node.where));
  for (const child of Object.values(node)) selects(child, out);
  return out;
}

describeEachBackend('GET /api/v1/orders: the older part of a changed-since list', (ctx) => {
  it('reads only the days that hold orders changed since, and gives the brute-force total and pages', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    // u is 2025-03-01T12:00. One order of January changed after u; orders of the weeks between,
    // none changed after u; orders of the days before u, some changed after it; orders after u.
    const layout = [
      { created: '2025-01-05T10:00:00.000Z', updated: '2025-03-05T00:00:00.000Z', phase: 'ACTIVE', path: true },
      ...['01-20', '01-27', '02-03', '02-10'].map((d) => ({
        created: `2025-${d}T10:00:00.000Z`,
        updated: `2025-${d}T10:00:00.000Z`,
        phase: 'ACTIVE',
        path: true,
      })),
      { created: '2025-02-20T10:00:00.000Z', updated: '2025-03-02T00:00:00.000Z', phase: 'PENDING', path: true },
      { created: '2025-02-22T10:00:00.000Z', updated: '2025-03-03T00:00:00.000Z', phase: 'ACTIVE', path: false },
      { created: '2025-02-24T10:00:00.000Z', updated: '2025-02-25T00:00:00.000Z', phase: 'ACTIVE', path: true },
      { created: '2025-02-27T10:00:00.000Z', updated: '2025-03-04T00:00:00.000Z', phase: 'ACTIVE', path: true },
      { created: '2025-03-01T06:00:00.000Z', updated: '2025-03-01T13:00:00.000Z', phase: 'ACTIVE', path: true },
      { created: '2025-03-01T18:00:00.000Z', updated: '2025-03-01T18:00:00.000Z', phase: 'ACTIVE', path: true },
      { created: '2025-03-03T10:00:00.000Z', updated: '2025-03-03T10:00:00.000Z', phase: 'PENDING', path: false },
    ];
    for (const o of layout) {
      const { id } = await createOrder(ctx(), t, f, {
        phase: o.phase,
        ...(o.path ? { properties: { erp: { no: 1 } } } : {}),
      });
      await ctx()
        .db.updateTable('orders')
        .set({ created_at: o.created, updated_at: o.updated })
        .where('id', '=', id)
        .execute();
    }
    await rebuildOrderProjections(ctx().db, t.businessId);
    const filters: Array<Partial<ListOrdersOptions>> = [
      {},
      { phase: 'ACTIVE' },
      { property: { segments: PATH, exists: true } },
      { property: { segments: PATH, exists: false } },
      { includeDeleted: true, phase: 'ACTIVE' },
    ];
    // Whatever the sizes, the plans that walk and split: no shallow shortcut, no collected candidates.
    await withListTuning({ shallowRows: 0, fewCandidates: -1 }, async () => {
      for (const extra of filters) {
        const expected = await expectedIds(ctx(), t, {
          ...NO_FILTER,
          page: 1,
          limit: 2,
          property: null,
          updatedSince: UPDATED_SINCE,
          ...extra,
        });
        let olderReads = 0;
        for (let page = 1; page <= Math.ceil(expected.length / 2) + 1; page++) {
          const options: ListOrdersOptions = {
            ...NO_FILTER,
            page,
            limit: 2,
            property: null,
            updatedSince: UPDATED_SINCE,
            ...extra,
          };
          const { plugin, trees } = recordingStatements();
          const listed = await listOrders(ctx().db.withPlugin(plugin), t.businessId, {
            ...options,
            tuning: testListTuning,
          });
          const what = `${JSON.stringify(extra)} page ${page}`;
          assert.equal(listed.total, expected.length, what);
          assert.deepEqual(
            listed.items.map((o) => o.id),
            expected.slice((page - 1) * 2, page * 2),
            what,
          );
          // Every read from a created time at or before u (the older part's) is bounded on both
          // sides by one range, never across the weeks between.
          for (const bounds of trees.flatMap((tree) => selects(tree))) {
            const from = bounds
              .filter(([op]) => op === '>=' || op === '>')
              .map(([, v]) => v)
              .sort()
              .at(-1);
            if (from === undefined || from >= UPDATED_SINCE) continue;
            olderReads++;
            const to = bounds
              .filter(([op]) => op === '<' || op === '<=')
              .map(([, v]) => v)
              .sort();
            assert.equal(to.length, 1, `${what}: an older read needs one upper bound ${JSON.stringify(bounds)}`);
            assert.ok(
              to[0] <= '2025-01-20T00:00:00.000Z' || from >= '2025-02-11T00:00:00.000Z',
              `${what}: read across the weeks between: ${from} to ${to[0]}`,
            );
          }
        }
        // The pages reached the older part (the last pages are made of it), so the check above saw its reads.
        assert.ok(olderReads > 0, `${JSON.stringify(extra)}: no read of the older part seen`);
      }
    });
  });
});
