import {
  beforeInListOrder,
  countOf,
  nextOf,
  offsetOf,
  pastTheEnd,
  type Position,
  rangeFromNearerEnd,
  selectPageIdsFromNearerEnd,
  type Page,
} from '../../db/list.ts';
import { sql, type SqlBool } from 'kysely';
import { anyOf, notIndexed } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import {
  activeFilters,
  changedSinceOf,
  filterOrders,
  filtersForRange,
  type ListOrdersOptions,
  type ListScope,
  type OrdersQuery,
} from './plan.ts';
import {
  bySideTableMatches,
  choosePage,
  chooseTotal,
  type ActiveFilters,
  type PageStrategy,
  type TotalStrategy,
} from './strategies.ts';
import { countChangedSince, olderChangedDays } from './change-counts.ts';
import { countOrders } from './counts.ts';
import { countByProperty, ordersFromSideTable, pathTotals, sumPathTotals, type PathTotal } from './property-reads.ts';
import type { OrderStub } from '../mapper.ts';
import { listDaysOnce, pageByCreatedDay, walkOf, type DaysOf } from './days.ts';
import { countInRanges, dayRuns, idsByRuns, runsOfDays, type CreatedRun } from './runs.ts';

const STUB = ['id', 'version', 'business_id', 'deleted_at', 'created_at'] as const;

/**
 * By primary key only: with the filters repeated, a planner without statistics may scan the whole
 * business's index. Rows soft-deleted since are kept: the next page is placed after them.
 */
async function findListedOrders(db: Db, businessId: string, ids: string[]): Promise<OrderStub[]> {
  const rows = await db
    .selectFrom('orders')
    .select(STUB)
    .where(anyOf(db, 'id', ids))
    .execute();
  const byId = new Map(rows.filter((r) => r.business_id === businessId).map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r) => r !== undefined);
}

export type { ListOrdersOptions } from './plan.ts';

interface Planned extends ListScope {
  active: ActiveFilters;
  query: OrdersQuery;
  /** The same orders, filtered for reads over a short range of rows (filtersForRange). */
  rangeQuery: OrdersQuery;
  candidates?: number;
  pathTotals?: PathTotal[];
  /** Read once, for both the total and the page. */
  split?: Promise<ChangedSplit>;
  days: DaysOf;
}

/** Read once, and passed on to the plans of the list's parts. */
type PropertyCounts = Pick<Planned, 'candidates' | 'pathTotals'>;

/**
 * The candidates decide whether collecting them beats walking the list. Grouped by phase and status
 * only when the list has one: that also gives its total (TOTALS.countByProperty) without a second sum.
 */
async function propertyCounts({ db, businessId, options }: ListScope, active: ActiveFilters): Promise<PropertyCounts> {
  if (!bySideTableMatches(active)) return {};
  if (active.has('propertyPresent') && (options.phase || options.status)) {
    const totals = await pathTotals(db, businessId, options.property!.segments.join('.'), options.includeDeleted);
    return { pathTotals: totals, candidates: sumPathTotals(totals, {}) };
  }
  return {
    candidates: await countByProperty(db, businessId, options.property!, { includeDeleted: options.includeDeleted }),
  };
}

/** `known`: the property counts a list with the same property filter and includeDeleted already read. */
async function planList(
  db: Db,
  businessId: string,
  options: ListOrdersOptions,
  known?: PropertyCounts,
): Promise<Planned> {
  const scope = { db, businessId, options };
  const active = activeFilters(scope);
  const counts = known ?? (await propertyCounts(scope, active));
  const query = filterOrders(scope);
  const rangeQuery = filterOrders(scope, {}, filtersForRange(db));
  // The days' counts read only their first day's rows by query.
  return { ...scope, active, query, rangeQuery, ...counts, days: listDaysOnce({ ...scope, query: rangeQuery }) };
}

const totalOf = (plan: Planned) => TOTALS[chooseTotal(plan.active, plan.candidates, plan.options.tuning)](plan);
const pageOf = (plan: Planned, total: number) =>
  PAGES[choosePage(plan.active, plan.candidates, plan.options.tuning)](plan, total);

interface ChangedSplit {
  recent: Planned;
  recentTotal: number;
  /** The older orders changed after u, with every filter; created before u only within `olderRuns`. */
  older: OrdersQuery;
  olderTotal: number;
  /** The runs of created days holding them, oldest first, with counts (per day too when unfiltered). */
  olderRuns: CreatedRun[];
}

/** The only filters under which the older part's counts come straight from order_change_counts. */
const UNFILTERED_OLDER = new Set(['changedSince', 'includeDeleted']);

/**
 * Exact because updatedAt >= createdAt: every order created after u changed after it and comes
 * first in list order. The older part is read only within the created days order_change_counts names.
 */
function changedSplit(plan: Planned): Promise<ChangedSplit> {
  plan.split ??= (async () => {
    const since = changedSinceOf(plan.options)!;
    // One after the other: the list reads at one moment, on one connection (readAtOneMoment).
    const recentPart = await recentOf(plan, since);
    return { ...recentPart, ...(await olderOf(plan, since)) };
  })();
  return plan.split;
}

async function recentOf(plan: Planned, since: string): Promise<Pick<ChangedSplit, 'recent' | 'recentTotal'>> {
  // changedSince is active only when createdSince (if any) is earlier, so `since` bounds both.
  const recent = await planList(
    plan.db,
    plan.businessId,
    { ...plan.options, createdSince: since, updatedSince: undefined, modifiedSince: undefined },
    { candidates: plan.candidates, pathTotals: plan.pathTotals },
  );
  return { recent, recentTotal: await totalOf(recent) };
}

async function olderOf(plan: Planned, since: string): Promise<Omit<ChangedSplit, 'recent' | 'recentTotal'>> {
  const days = await olderChangedDays(plan.db, plan.businessId, since, plan.options.includeDeleted);
  // updated_at must not lead the plan: the runs of created days bound the rows.
  const older = filterOrders(plan, { except: ['changedSince'] }, filtersForRange(plan.db)).where(
    sql<SqlBool>`${notIndexed(plan.db, 'updated_at')} > ${since}`,
  );
  if ([...plan.active.keys()].every((name) => UNFILTERED_OLDER.has(name))) {
    return { older, olderTotal: days.reduce((sum, d) => sum + d.n, 0), olderRuns: runsOfDays(days, since) };
  }
  // Created at or before u: the last run ends at u, included.
  const runs = dayRuns(
    days.map((d) => d.day),
    { through: since },
  );
  const counts = await countInRanges(plan.db, older, runs);
  return {
    older,
    olderTotal: counts.reduce((sum, n) => sum + n, 0),
    olderRuns: runs.map((run, i) => ({ ...run, n: counts[i] })),
  };
}

const fromSideTable = (plan: Planned) =>
  filterOrders(plan, {
    except: ['propertyValue', 'propertyPresent'],
    from: ordersFromSideTable(
      plan.db,
      plan.businessId,
      plan.options.property!,
      plan.options.includeDeleted,
    ) as unknown as OrdersQuery,
  });

const TOTALS: Record<TotalStrategy | 'count', (plan: Planned) => Promise<number>> = {
  countOrders: ({ db, businessId, options }) => countOrders(db, businessId, options),
  // Path totals and candidates span every created day, so createdSince does not declare this total.
  countByProperty: ({ db, businessId, options, candidates, pathTotals: totals }) => {
    if (totals) return Promise.resolve(sumPathTotals(totals, options));
    if (candidates !== undefined && !options.phase && !options.status) return Promise.resolve(candidates);
    return countByProperty(db, businessId, options.property!, options);
  },
  countChangedSince: ({ db, businessId, options }) =>
    countChangedSince(db, businessId, changedSinceOf(options)!, options.includeDeleted),
  countByCreatedDay: async (plan) => (await plan.days('desc')).reduce((sum, d) => sum + d.n, 0),
  countFromSideTable: (plan) => countOf(fromSideTable(plan)),
  countChangedSplit: async (plan) => {
    const { recentTotal, olderTotal } = await changedSplit(plan);
    return recentTotal + olderTotal;
  },
  count: ({ query }) => countOf(query),
};

const PAGES: Record<PageStrategy | 'sorted', (plan: Planned, total: number) => Promise<string[]>> = {
  pageFromSideTable: (plan, total) => selectPageIdsFromNearerEnd(fromSideTable(plan), plan.options, total),
  pageChangedSince,
  pageByCreatedDay: (plan, total) =>
    pageByCreatedDay(
      plan.db,
      plan.businessId,
      plan.query,
      plan.options,
      total,
      plan.days,
      walkOf(plan, plan.active, plan.rangeQuery),
    ),
  sorted: ({ query, options }, total) => selectPageIdsFromNearerEnd(query, options, total),
};

/** A page of order stubs and the exact total, read as strategies.ts chooses (README.md). */
export async function listOrders(db: Db, businessId: string, options: ListOrdersOptions): Promise<Page<OrderStub>> {
  const plan = await planList(db, businessId, { ...options, after: undefined });
  const total = await totalOf(plan);
  const ids = await pageIdsOf(plan, options, total);
  const rows = ids.length === 0 ? [] : await findListedOrders(db, businessId, ids);
  return {
    // An order soft-deleted since its id was read is left out, as it would have been a moment later.
    items: options.includeDeleted ? rows : rows.filter((row) => row.deleted_at === null),
    total,
    page: options.page,
    pageSize: options.limit,
    next: nextOf(rows, options, total),
  };
}

/**
 * None past the end: reading one would walk the whole offset to find nothing. After a cursor's
 * place, the first `limit` ids read forward (an unbounded total: nothing is read from the far end).
 */
async function pageIdsOf(plan: Planned, options: ListOrdersOptions, total: number): Promise<string[]> {
  if (!options.after) return pastTheEnd(total, options) ? [] : pageOf(plan, total);
  if (
    plan.active.has('changedSince') &&
    choosePage(plan.active, plan.candidates, plan.options.tuning) === 'pageChangedSince'
  )
    return cursorPageChangedSince(plan, options, options.after);
  const fromPlace = await planList(
    plan.db,
    plan.businessId,
    { ...options, page: 1 },
    { candidates: plan.candidates, pathTotals: plan.pathTotals },
  );
  return pageOf(fromPlace, Infinity);
}

/** Split as changedSplit: the recent part from the place, then the older part's runs not newer than it. */
async function cursorPageChangedSince(plan: Planned, options: ListOrdersOptions, after: Position): Promise<string[]> {
  const since = changedSinceOf(options)!;
  const recentIds =
    after.createdAt! > since
      ? await pageOf(
          await planList(
            plan.db,
            plan.businessId,
            { ...options, page: 1, createdSince: since, updatedSince: undefined, modifiedSince: undefined },
            { candidates: plan.candidates, pathTotals: plan.pathTotals },
          ),
          Infinity,
        )
      : [];
  if (recentIds.length >= options.limit) return recentIds;
  const { older, olderRuns } = await changedSplit(plan);
  const runs = olderRuns.filter((run) => run.from <= after.createdAt!);
  const olderIds = await idsByRuns(older.where(beforeInListOrder(after, 'orders')), runs, {
    backwards: false,
    skip: 0,
    take: options.limit - recentIds.length,
  });
  return [...recentIds, ...olderIds];
}

/** The recent part's page, and where it runs short, the older part's from its nearer end, run by run. */
async function pageChangedSince(plan: Planned, total: number): Promise<string[]> {
  const { recent, recentTotal, older, olderRuns } = await changedSplit(plan);
  const { page, limit } = plan.options;
  const offset = offsetOf(page, limit);
  const recentIds = offset < recentTotal ? await pageOf(recent, recentTotal) : [];
  if (recentIds.length >= limit) return recentIds;
  const range = rangeFromNearerEnd(total - recentTotal, Math.max(0, offset - recentTotal), limit - recentIds.length);
  const olderIds = await idsByRuns(older, olderRuns, range);
  return [...recentIds, ...olderIds];
}
