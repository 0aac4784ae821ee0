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
 * The stubs of `ids`, in that order, by primary key only: the ids were just selected with every
 * filter, and those filters can lead a planner without statistics to scan an index of the whole
 * business instead of looking up 20 keys. Rows soft-deleted since are kept (the list leaves them
 * out, and places its next page after them); other changes show as they are now.
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

/** A planned list: its scope, its active filters and its query with every filter. */
interface Planned extends ListScope {
  active: ActiveFilters;
  query: OrdersQuery;
  /** The same orders, filtered for reads over a short range: from a given day, or near an end (plan.ts `filtersForRange`). */
  rangeQuery: OrdersQuery;
  /** The orders matching the property filter alone, when the side table answers it. */
  candidates?: number;
  /** A present path's orders per phase and status, which `candidates` sums (propertyCounts). */
  pathTotals?: PathTotal[];
  /** The list split at its changedSince, read once for its total and its page. */
  split?: Promise<ChangedSplit>;
  /** Its orders per created day, read once for its total and its page. */
  days: DaysOf;
}

/** What a plan knows of its property filter's matches: read once, and passed on to the plans of its parts. */
type PropertyCounts = Pick<Planned, 'candidates' | 'pathTotals'>;

/**
 * How many orders match the property filter alone, when the side table lists its matches (a value,
 * a present path): whether collecting them beats walking the list depends on it. A present path's
 * counts are read per phase and status when the list has either, which also gives its total of that
 * phase and status (TOTALS.countByProperty) without a second sum.
 */
async function propertyCounts({ db, businessId, options }: ListScope, active: ActiveFilters): Promise<PropertyCounts> {
  if (!bySideTableMatches(active)) return {};
  // Grouped only when a phase or status will take its share: a plain sum is cheaper by a little.
  if (active.has('propertyPresent') && (options.phase || options.status)) {
    const totals = await pathTotals(db, businessId, options.property!.segments.join('.'), options.includeDeleted);
    return { pathTotals: totals, candidates: sumPathTotals(totals, {}) };
  }
  return {
    candidates: await countByProperty(db, businessId, options.property!, { includeDeleted: options.includeDeleted }),
  };
}

/**
 * `known`, when given, is what a list with the same property filter and includeDeleted already read
 * of its matches (it depends on nothing else): the two parts of a changed-since split read it once,
 * as a path's sum is a query of its own.
 */
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
  /**
   * The runs of created days (oldest first) that hold them, with how many each holds, and without
   * other filters how many each day holds. Their pages read only these.
   */
  olderRuns: CreatedRun[];
}

/** The filters the older part's day counts take: none but changedSince itself, live or with deleted orders. */
const UNFILTERED_OLDER = new Set(['changedSince', 'includeDeleted']);

/**
 * A list changed after u, split in two. The orders created after u all changed after it
 * (updatedAt >= createdAt) and come first in list order: a createdSince list with the other filters
 * (day counts, path counts, the side table). Then those created at or before u and changed after it:
 * `order_change_counts` names their created days (olderChangedDays), whose rows alone are read, and
 * without other filters gives their count and pages by day. They are few among a long window's
 * changes, all of which the updated_at index would walk, the last page backwards from the oldest.
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

/** The orders created after u, planned as a createdSince list with the other filters. */
async function recentOf(plan: Planned, since: string): Promise<Pick<ChangedSplit, 'recent' | 'recentTotal'>> {
  // changedSince is active only when createdSince (if any) is earlier, so `since` bounds both.
  // The same property filter and includeDeleted: the same candidates.
  const recent = await planList(
    plan.db,
    plan.businessId,
    { ...plan.options, createdSince: since, updatedSince: undefined, modifiedSince: undefined },
    { candidates: plan.candidates, pathTotals: plan.pathTotals },
  );
  return { recent, recentTotal: await totalOf(recent) };
}

/**
 * The orders created at or before u and changed after it, and where they were created. Only the
 * days `order_change_counts` names are read (dayRuns): one old order changed after u once made the
 * count read every order created since that order's day.
 */
async function olderOf(plan: Planned, since: string): Promise<Omit<ChangedSplit, 'recent' | 'recentTotal'>> {
  const days = await olderChangedDays(plan.db, plan.businessId, since, plan.options.includeDeleted);
  // Every filter but changedSince's range over updated_at, which must not lead: the runs of created days bound the rows.
  // A short range of rows: the property filter as filtersForRange says.
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

/** The list's orders from the side table's matches of its property filter, with every other filter. */
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
  // Of the list's phase and status: from a present path's totals, or the candidates when no phase or status narrows them.
  // Both count every created day: no filter that bounds the days (createdSince) declares this total.
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
  // Exact for any filter; the indexes answer it.
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
  // An index can answer the ids without reading rows, however many rows the filters pass over.
  sorted: ({ query, options }, total) => selectPageIdsFromNearerEnd(query, options, total),
};

/**
 * A page of orders: the total, then the page's ids, then those orders' stubs (id, version) by
 * primary key, for src/orders/render.ts to render. The total and the ids are
 * read as src/orders/read-model/strategies.ts chooses: from maintained counts and the side table
 * `order_properties` when the filters allow it, otherwise by the filtered query.
 */
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
 * The page's ids. By number: as the plan chooses, none past the end (reading one would walk the
 * whole offset to find nothing). After a cursor's place: the first `limit` ids of the list
 * from there, read forward (an unbounded total: nothing is read from the far end).
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

/**
 * A cursor page of a list changed after u, split as its pages by number are (changedSplit): the
 * orders created after u from the place, then the older ones changed after u, from the place, in
 * the runs of created days that hold them and are not newer than the place. Walking from the place
 * through every created day instead read days that hold none of them.
 */
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

/**
 * The page's ids of a list changed after u (changedSplit): the page of the orders created after u,
 * read as that list's plan reads it, and where it runs short, the older orders changed after u,
 * from the nearer end of theirs, within the runs of created days that hold them (olderOf). Sorting the
 * whole window instead made every poll of the first page sort every change in it.
 */
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
