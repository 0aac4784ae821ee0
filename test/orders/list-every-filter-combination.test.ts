import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { PropertyFilter } from '../../src/db/list.ts';
import {
  activeFilters,
  filterOrders,
  ORDER_FILTERS,
  type ListFilter,
  type ListOrdersOptions,
  type OrderFilterName,
  type OrdersQuery,
} from '../../src/orders/read-model/plan.ts';
import {
  bySideTableMatches,
  choosePage,
  chooseTotal,
  DEFAULT_LIST_TUNING,
} from '../../src/orders/read-model/strategies.ts';
import { ordersFromSideTable } from '../../src/orders/read-model/property-reads.ts';
import { ListOrdersQuery } from '../../src/orders/schema.ts';
import { createTestContext, describeEachBackend, type TestContext } from '../helpers/context.ts';
import {
  CREATED_SINCE,
  createOrders,
  expectedIds,
  MODIFIED_SINCE,
  NO_FILTER,
  PATH,
  UPDATED_SINCE,
} from '../helpers/list-fixture.ts';
import { testListTuning, walkingEveryDay, withListTuning } from '../helpers/orders.ts';

const PROPERTIES: Array<PropertyFilter | null> = [
  null,
  { segments: PATH, value: '456' },
  { segments: PATH, exists: true },
  { segments: PATH, exists: false },
];

/** Every combination of the declared filters, with the query string the route reads it from. */
function* combinations(): Generator<{ options: ListOrdersOptions; query: string; refused: boolean }> {
  const onOff = [false, true];
  for (const phase of onOff)
    for (const status of onOff)
      for (const property of PROPERTIES)
        for (const created of onOff)
          for (const updated of onOff)
            for (const modified of onOff)
              for (const includeDeleted of onOff) {
                const options: ListOrdersOptions = {
                  page: 1,
                  limit: 3,
                  includeDeleted,
                  property,
                  phase: phase ? 'ACTIVE' : undefined,
                  status: status ? 'ACCEPTED' : undefined,
                  createdSince: created ? CREATED_SINCE : undefined,
                  updatedSince: updated ? UPDATED_SINCE : undefined,
                  modifiedSince: modified ? MODIFIED_SINCE : undefined,
                };
                const params = new URLSearchParams({ limit: '3' });
                if (includeDeleted) params.set('includeDeleted', 'true');
                for (const key of ['phase', 'status', 'createdSince', 'updatedSince', 'modifiedSince'] as const) {
                  if (options[key] !== undefined) params.set(key, options[key]);
                }
                if (property) params.set('propertyPath', property.segments.join('.'));
                if (property?.value !== undefined) params.set('propertyValue', property.value);
                if (property?.exists !== undefined) params.set('propertyExists', String(property.exists));
                yield { options, query: params.toString(), refused: modified && (created || updated) };
              }
}

describeEachBackend('GET /api/v1/orders: every combination of filters against brute force', (ctx) => {
  it('gives the exact total and every page, whichever strategies the plan chooses', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    const totals = new Set<string>();
    const pages = new Set<string>();
    // The strategies that served lists with deleted orders: counts and day walks, not only the general plan.
    const withDeleted = new Set<string>();
    let checked = 0;
    // Twice: as planned, then with no property filter's matches few enough to collect (the walk instead).
    for (const fewCandidates of [DEFAULT_LIST_TUNING.fewCandidates, 0]) {
      await withListTuning({ fewCandidates }, async () => {
        for (const { options, query, refused } of combinations()) {
          if (refused) {
            const res = await ctx().request('GET', `/api/v1/orders?${query}`, { as: t });
            assert.equal(res.status, 400, query);
            assert.ok(res.body.fieldErrors?.modifiedSince, query);
            continue;
          }
          const expected = await expectedIds(ctx(), t, options);
          const active = activeFilters({ db: ctx().db, businessId: t.businessId, options });
          const candidates = bySideTableMatches(active)
            ? (await expectedIds(ctx(), t, { ...options, ...NO_FILTER, property: options.property })).length
            : undefined;
          totals.add(chooseTotal(active, candidates, testListTuning));
          pages.add(choosePage(active, candidates, testListTuning));
          if (options.includeDeleted)
            withDeleted
              .add(chooseTotal(active, candidates, testListTuning))
              .add(choosePage(active, candidates, testListTuning));
          const seen: string[] = [];
          // Every page, and one past the last; every page the created-day strategy serves is walked by day, as deep pages are.
          for (let page = 1; page <= Math.ceil(expected.length / 3) + 1; page++) {
            const res = await withListTuning({ shallowRows: 0 }, () =>
              ctx().request('GET', `/api/v1/orders?${query}&page=${page}`, { as: t }),
            );
            assert.equal(res.status, 200, `${query} page ${page}: ${JSON.stringify(res.body)}`);
            assert.equal(res.body.total, expected.length, `total of ${query} page ${page}`);
            seen.push(...res.body.items.map((o: { id: string }) => o.id));
          }
          assert.deepEqual(seen, expected, `${query} (fewCandidates ${fewCandidates})`);
          // And by cursor, from the first page to the end: the same orders, each page numbered on.
          const walked: string[] = [];
          for (let cursor: string | null = null, page = 1; ; page++) {
            const url: string = `/api/v1/orders?${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
            const res: { status: number; body: any } = await ctx().request('GET', url, { as: t });
            assert.equal(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
            assert.equal(res.body.page, page, url);
            walked.push(...res.body.items.map((o: { id: string }) => o.id));
            cursor = res.body.nextCursor;
            if (cursor === null) break;
          }
          assert.deepEqual(walked, expected, `${query} by cursor (fewCandidates ${fewCandidates})`);
          checked++;
        }
      });
    }
    assert.equal(checked, 320);
    // The fixture reaches every strategy, so each one is checked against brute force.
    assert.deepEqual([...totals].sort(), [
      'count',
      'countByCreatedDay',
      'countByProperty',
      'countChangedSince',
      'countChangedSplit',
      'countFromSideTable',
      'countOrders',
    ]);
    assert.deepEqual([...pages].sort(), ['pageByCreatedDay', 'pageChangedSince', 'pageFromSideTable', 'sorted']);
    assert.deepEqual([...withDeleted].sort(), [
      'count',
      'countByCreatedDay',
      'countByProperty',
      'countChangedSince',
      'countChangedSplit',
      'countFromSideTable',
      'countOrders',
      'pageByCreatedDay',
      'pageChangedSince',
      'pageFromSideTable',
      'sorted',
    ]);
  });
});

describeEachBackend('GET /api/v1/orders: createdSince with an earlier updatedSince', (ctx) => {
  it('reads it as createdSince alone (updatedAt >= createdAt), by the created-day counts, and gives the brute-force pages', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    // Mid-day, so that its own day is counted by query and the later days by their counts.
    for (const [createdSince, updatedSince] of [
      [UPDATED_SINCE, CREATED_SINCE],
      [UPDATED_SINCE, UPDATED_SINCE],
      ['2025-02-10T00:00:00.000Z', '2024-01-01T00:00:00.000Z'],
    ]) {
      const options: ListOrdersOptions = {
        page: 1,
        limit: 2,
        includeDeleted: false,
        property: null,
        createdSince,
        updatedSince,
      };
      const active = activeFilters({ db: ctx().db, businessId: t.businessId, options });
      assert.deepEqual([...active.keys()], ['createdSince']);
      assert.equal(chooseTotal(active), 'countByCreatedDay');
      const expected = await expectedIds(ctx(), t, options);
      assert.ok(expected.length >= 3, 'more than one page');
      const seen: string[] = [];
      for (let page = 1; page <= Math.ceil(expected.length / 2) + 1; page++) {
        const query = `createdSince=${createdSince}&updatedSince=${updatedSince}&limit=2&page=${page}`;
        const res = await walkingEveryDay(() => ctx().request('GET', `/api/v1/orders?${query}`, { as: t }));
        assert.equal(res.status, 200);
        assert.equal(res.body.total, expected.length, query);
        seen.push(...res.body.items.map((o: { id: string }) => o.id));
      }
      assert.deepEqual(seen, expected, `${createdSince} ${updatedSince}`);
    }
  });
});

describe('order list plan', () => {
  const only = (...names: OrderFilterName[]) => new Map<string, ListFilter>(names.map((n) => [n, ORDER_FILTERS[n]]));

  it('declares a filter for every query parameter of the list but paging', () => {
    const declared = new Set(Object.values(ORDER_FILTERS).flatMap((f) => f.keys));
    assert.deepEqual(
      Object.keys(ListOrdersQuery.properties)
        .filter((k) => !declared.has(k))
        .sort(),
      ['limit', 'page'],
    );
  });

  it('uses a maintained count or a page strategy only for the combinations that declare it', () => {
    assert.equal(chooseTotal(only()), 'countOrders');
    assert.equal(chooseTotal(only('phase', 'status')), 'countOrders');
    assert.equal(chooseTotal(only('propertyValue')), 'countByProperty');
    assert.equal(chooseTotal(only('propertyPresent')), 'countByProperty');
    // Paths are counted per phase and status; values are not.
    assert.equal(chooseTotal(only('phase', 'status', 'propertyAbsent')), 'countByProperty');
    assert.equal(chooseTotal(only('phase', 'propertyPresent')), 'countByProperty');
    assert.equal(chooseTotal(only('status', 'propertyValue')), 'count');
    assert.equal(chooseTotal(only('status', 'propertyValue'), 10), 'countFromSideTable');
    assert.equal(chooseTotal(only('propertyAbsent')), 'countByProperty');
    assert.equal(chooseTotal(only('changedSince')), 'countChangedSince');
    assert.equal(choosePage(only('propertyValue'), 5_000), 'pageFromSideTable');
    assert.equal(choosePage(only('propertyValue'), 5_001), 'sorted');
    // A property's few matches, with filters on the orders' own columns, are collected and the filters tested on them.
    assert.equal(
      chooseTotal(only('propertyValue', 'phase', 'status', 'createdSince', 'changedSince'), 5_000),
      'countFromSideTable',
    );
    assert.equal(
      choosePage(only('propertyValue', 'phase', 'status', 'createdSince', 'changedSince'), 5_000),
      'pageFromSideTable',
    );
    assert.equal(chooseTotal(only('propertyValue', 'phase'), 5_001), 'count');
    // Paths are counted per created day: a path with many matches, or an absent one, pages by day.
    assert.equal(choosePage(only('propertyPresent', 'phase'), 5_001), 'pageByCreatedDay');
    assert.equal(choosePage(only('propertyAbsent'), 1), 'pageByCreatedDay');
    assert.equal(chooseTotal(only('createdSince', 'propertyAbsent')), 'countByCreatedDay');
    assert.equal(
      chooseTotal(only('createdSince', 'propertyPresent', 'status', 'includeDeleted'), 5_001),
      'countByCreatedDay',
    );
    assert.equal(choosePage(only('createdSince', 'propertyAbsent', 'includeDeleted'), 0), 'pageByCreatedDay');
    assert.equal(choosePage(only('propertyValue', 'phase'), 5_001), 'sorted', 'values are not counted per day');
    assert.equal(choosePage(only('changedSince', 'phase', 'includeDeleted'), 1), 'pageChangedSince');
    assert.equal(choosePage(only(), 0), 'pageByCreatedDay');
    assert.equal(choosePage(only('phase', 'status'), 0), 'pageByCreatedDay', 'the day counts are per phase and status');
    assert.equal(chooseTotal(only('status', 'createdSince')), 'countByCreatedDay');
    assert.equal(choosePage(only('status', 'createdSince'), 0), 'pageByCreatedDay', 'createdSince bounds the days');
    // Deleted orders are counted per day, phase and status beside the live ones.
    assert.equal(chooseTotal(only('includeDeleted')), 'countOrders');
    assert.equal(chooseTotal(only('phase', 'status', 'includeDeleted')), 'countOrders');
    assert.equal(chooseTotal(only('createdSince', 'includeDeleted')), 'countByCreatedDay');
    assert.equal(chooseTotal(only('changedSince', 'includeDeleted')), 'countChangedSince');
    assert.equal(choosePage(only('includeDeleted'), 0), 'pageByCreatedDay');
    assert.equal(choosePage(only('phase', 'includeDeleted'), 0), 'pageByCreatedDay');
    assert.equal(choosePage(only('status', 'createdSince', 'includeDeleted'), 0), 'pageByCreatedDay');
    // Deleted orders' properties are indexed and their paths counted beside the live ones'.
    assert.equal(chooseTotal(only('propertyAbsent', 'phase', 'includeDeleted')), 'countByProperty');
    assert.equal(chooseTotal(only('propertyValue', 'includeDeleted')), 'countByProperty');
    assert.equal(choosePage(only('propertyValue', 'createdSince', 'includeDeleted'), 10), 'pageFromSideTable');
    // A path the side tables cannot answer keeps the JSON functions, with or without deleted orders.
    assert.equal(chooseTotal(only('propertyJson', 'includeDeleted')), 'count');
    assert.equal(choosePage(only('propertyJson', 'includeDeleted'), 0), 'sorted');
  });

  it('falls back to the exact general plan for a combination no strategy declares', () => {
    for (const active of [
      only('phase', 'propertyValue'),
      only('createdSince', 'propertyValue'),
      only('propertyJson'),
      only('propertyJson', 'includeDeleted'),
      only('phase', 'propertyJson', 'includeDeleted'),
    ])
      assert.equal(chooseTotal(active), 'count', [...active.keys()].join('+'));
    // Changed since u: the orders created after u are planned as their own list, the older ones counted by the updated_at range.
    for (const active of [
      only('changedSince', 'status'),
      only('propertyValue', 'changedSince'),
      only('changedSince', 'propertyJson', 'includeDeleted'),
    ]) {
      assert.equal(chooseTotal(active), 'countChangedSplit', [...active.keys()].join('+'));
    }
    assert.equal(choosePage(only('phase', 'propertyValue')), 'sorted');
  });

  it('gives a new filter that declares no strategy the general count and the sorted page, alone or combined', () => {
    const colour: ListFilter = { keys: ['colour'], active: () => true, where: (query) => query, totals: [], pages: [] };
    for (const others of [only(), only('phase'), only('propertyValue'), only('changedSince')]) {
      const active = new Map([...others, ['colour', colour]]);
      assert.equal(chooseTotal(active), 'count');
      assert.equal(choosePage(active, 1), 'sorted');
    }
  });
});

// A question about SQLite's planner, which has no statistics to choose by; PostgreSQL plans from its statistics.
describe('order list plan on SQLite: the side table candidates', () => {
  let context: TestContext;
  before(async () => {
    context = await createTestContext('sqlite');
  });
  after(async () => {
    await context?.close();
  });

  it('are looked up by primary key, whatever other filters the list has', async () => {
    const tenant = await context.createTenant();
    const property = { segments: ['unleashed', 'guid'], exists: true };
    for (const extra of [
      {},
      { phase: 'ACTIVE' },
      { createdSince: CREATED_SINCE },
      { status: 'ACCEPTED', updatedSince: UPDATED_SINCE },
      { includeDeleted: true, phase: 'ACTIVE' },
    ]) {
      const options: ListOrdersOptions = { page: 1, limit: 20, includeDeleted: false, property, ...extra };
      const scope = { db: context.db, businessId: tenant.businessId, options };
      const from = ordersFromSideTable(
        context.db,
        tenant.businessId,
        property,
        options.includeDeleted,
      ) as unknown as OrdersQuery;
      const query = filterOrders(scope, { except: ['propertyValue', 'propertyPresent'], from })
        .select('id')
        .orderBy('created_at', 'desc')
        .limit(20)
        .compile();
      const plan = await context.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
      );
      const detail = plan.rows.map((r) => r.detail).join(' | ');
      // The join to orders must be by its key.
      assert.match(
        detail,
        /SEARCH orders USING INDEX sqlite_autoindex_orders_1 \(id=\?\)/,
        `${JSON.stringify(extra)}: ${detail}`,
      );
    }
  });
});
