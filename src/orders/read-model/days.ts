import { countOf, nearerEnd, selectIdsFrom } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import {
  filterOrders,
  filtersForRange,
  ROW_TESTED,
  type ListOrdersOptions,
  type ListScope,
  type OrdersQuery,
} from './plan.ts';
import { DEFAULT_LIST_TUNING, type ActiveFilters } from './strategies.ts';
import { createdDays } from './created-counts.ts';

/**
 * Pages of order lists walked by created day: whole days passed by maintained counts, then one
 * day's rows (src/orders/read-model/list.ts chooses when, by the plan in plan.ts).
 */

/** The first instant of a UTC day (`YYYY-MM-DD`), and of the day after it. */
export const dayStart = (day: string) => `${day}T00:00:00.000Z`;
export const nextDay = (day: string) => new Date(Date.parse(dayStart(day)) + 86_400_000).toISOString();

/**
 * The path filter the day counts take: a path present or absent. The plan chooses the day counts
 * only when every active filter declares them, which a value and a path the side tables cannot
 * answer do not, so `property` is then null or such a path.
 */
const pathOf = ({ property }: ListOrdersOptions) =>
  property && property.value === undefined
    ? { path: property.segments.join('.'), exists: property.exists !== false }
    : undefined;

/**
 * The list's orders per created day (src/orders/read-model/created-counts.ts), of its phase,
 * status and path filter, live ones or with includeDeleted all. With `createdSince`, only the days
 * from its own, and its own counted exactly by `query` (the orders created later that day: one day's rows).
 */
export async function listDays(
  { db, businessId, query, options }: { db: Db; businessId: string; query: OrdersQuery; options: ListOrdersOptions },
  direction: 'asc' | 'desc',
): Promise<Array<{ day: string; n: number }>> {
  const fromDay = options.createdSince?.slice(0, 10);
  const days = await createdDays(db, businessId, direction, {
    phase: options.phase,
    status: options.status,
    fromDay,
    includeDeleted: options.includeDeleted,
    path: pathOf(options),
  });
  if (fromDay === undefined || days.length === 0) return days;
  const first = direction === 'asc' ? 0 : days.length - 1;
  if (days[first].day === fromDay)
    days[first] = { day: fromDay, n: await countOf(query.where('created_at', '<', nextDay(fromDay))) };
  return days;
}

/** A list's orders per created day, in the direction asked for. */
export type DaysOf = (direction: 'asc' | 'desc') => Promise<Array<{ day: string; n: number }>>;

/**
 * `listDays` of one list, read at most once: a list whose total and page both go by day (its total
 * sums the days, its page passes them) reads them for both, as a path's days are a query of their
 * own. Read newest first; oldest first is the same days reversed.
 */
export function listDaysOnce(list: Parameters<typeof listDays>[0]): DaysOf {
  let newestFirst: ReturnType<DaysOf> | undefined;
  return (direction) => {
    newestFirst ??= listDays(list, 'desc');
    return direction === 'desc' ? newestFirst : newestFirst.then((days) => [...days].reverse());
  };
}

/**
 * How a page's walks read: `rows`, the list filtered as its walks read it; `nearest`, when a filter
 * no index serves narrows it (a path), the same rows among only the `reach` rows nearest the end
 * walked of the list without that filter (nearestRows).
 */
export interface Walk {
  rows: OrdersQuery;
  nearest?: (backwards: boolean, reach: number) => OrdersQuery;
}

/** What a walk's filters read of a row: every filter's column but updated_at (changedSince lists are not walked by day). */
const WALKED_COLUMNS = ['id', 'business_id', 'created_at', 'deleted_at', 'phase', 'status', 'properties'] as const;

/**
 * The `reach` rows of `list` nearest the end walked, as `orders` for filters to be added to (the
 * walk adds every filter again, those the subquery already applied too: harmless, and one query):
 * both backends read them as the walk asks for them, so a walk that finds its rows early reads no
 * more than without the bound.
 */
function nearestRows(db: Db, list: OrdersQuery, backwards: boolean, reach: number): OrdersQuery {
  const direction = backwards ? 'asc' : 'desc';
  const nearest = list
    .clearSelect()
    .select(WALKED_COLUMNS)
    .orderBy('created_at', direction)
    .orderBy('id', direction)
    .limit(reach);
  return db.selectFrom(nearest.as('orders')) as unknown as OrdersQuery;
}

/** How a walk by created day reads a list: `rows`, filtered for a short range; near an end, within a reach when a path narrows it. */
export function walkOf(scope: ListScope, active: ActiveFilters, rows: OrdersQuery): Walk {
  if (!ROW_TESTED.some((name) => active.has(name))) return { rows };
  const others = filterOrders(scope, { except: [...ROW_TESTED] });
  return {
    rows,
    nearest: (backwards, reach) =>
      filterOrders(scope, { from: nearestRows(scope.db, others, backwards, reach) }, filtersForRange(scope.db)),
  };
}

/**
 * A page of the list of orders (live, or with includeDeleted all), unfiltered or by phase, status,
 * createdSince and/or a path's presence or absence, deep in it: from the nearer end, whole days
 * are passed over by their maintained counts (`order_created_counts`, or the path counts), and
 * only the rows of the day the page starts in are walked, not every entry before the page. `total`
 * is the exact count of the list, which its days sum to; `query` has every filter's condition.
 */
export async function pageByCreatedDay(
  db: Db,
  businessId: string,
  query: OrdersQuery,
  options: ListOrdersOptions,
  total: number,
  daysOf: DaysOf = listDaysOnce({ db, businessId, query, options }),
  walk: Walk = { rows: query },
): Promise<string[]> {
  return idsByDays(walk, daysOf, nearerEnd(total, options), (options.tuning ?? DEFAULT_LIST_TUNING).shallowRows);
}

/**
 * How many rows of the list without its path a walk of `skip + take` of its rows from an end reads
 * at most. Where the path's orders lie further from that end, the day counts say where they are:
 * walking without a bound, a first page of a path only the oldest orders have read every row, and
 * reading the days for every list by a path instead made every first page dearer.
 */
const reachOf = (skip: number, take: number, shallowRows: number) => Math.max(shallowRows, 4 * (skip + take));

/**
 * `take` ids of the walk's rows after `skip`, in list order or backwards from its end, passing
 * whole days by `daysOf` (rows per created day in the direction walked: oldest first when
 * backwards) and walking only the rows of the day the range starts in; or, fewer than `shallowRows`
 * from the end, walking from it, within the reach (reachOf) when a path filters the list. The rows
 * are filtered for a short range (plan.ts `filtersForRange`): on PostgreSQL a path tested on each
 * row's JSON beat a probe of the side table per row.
 */
export async function idsByDays(
  { rows, nearest }: Walk,
  daysOf: DaysOf,
  { backwards, skip, take }: { backwards: boolean; skip: number; take: number },
  shallowRows: number,
): Promise<string[]> {
  if (take <= 0) return [];
  if (skip < shallowRows) {
    if (nearest === undefined) return selectIdsFrom(rows, backwards, skip, take);
    const ids = await selectIdsFrom(nearest(backwards, reachOf(skip, take, shallowRows)), backwards, skip, take);
    // `take` is what the list holds there (its exact total says so): fewer, and the rest lie past the reach.
    if (ids.length === take) return ids;
  }
  let passed = 0;
  let start: string | undefined;
  for (const { day, n } of await daysOf(backwards ? 'asc' : 'desc')) {
    if (passed + n > skip) {
      start = day;
      break;
    }
    passed += n;
  }
  // Fewer rows than the counts said a moment ago (an order deleted since): past the end.
  if (start === undefined) return [];
  const within = backwards
    ? rows.where('created_at', '>=', dayStart(start))
    : rows.where('created_at', '<', nextDay(start));
  return selectIdsFrom(within, backwards, skip - passed, take);
}
