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

/** Pages of order lists walked by created day: whole days passed by their counts, then one day's rows. */

export const dayStart = (day: string) => `${day}T00:00:00.000Z`;
export const nextDay = (day: string) => new Date(Date.parse(dayStart(day)) + 86_400_000).toISOString();

/** No value here: a value filter never declares the day counts, so `property` is null or a path. */
const pathOf = ({ property }: ListOrdersOptions) =>
  property && property.value === undefined
    ? { path: property.segments.join('.'), exists: property.exists !== false }
    : undefined;

/** With `createdSince`, its own day is counted exactly by `query` (one day's rows). */
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

export type DaysOf = (direction: 'asc' | 'desc') => Promise<Array<{ day: string; n: number }>>;

/** `listDays` read at most once, for both the total and the page; oldest first is newest first reversed. */
export function listDaysOnce(list: Parameters<typeof listDays>[0]): DaysOf {
  let newestFirst: ReturnType<DaysOf> | undefined;
  return (direction) => {
    newestFirst ??= listDays(list, 'desc');
    return direction === 'desc' ? newestFirst : newestFirst.then((days) => [...days].reverse());
  };
}

/** `nearest`, when a filter no index serves narrows the rows: the same rows within `reach` of the end walked. */
export interface Walk {
  rows: OrdersQuery;
  nearest?: (backwards: boolean, reach: number) => OrdersQuery;
}

/** Every filter's column but updated_at: changedSince lists are not walked by day. */
const WALKED_COLUMNS = ['id', 'business_id', 'created_at', 'deleted_at', 'phase', 'status', 'properties'] as const;

/**
 * Filters already applied inside are applied again: harmless, and one query. Both backends read the
 * subquery as the walk asks, so a walk that finds its rows early reads no more than without the bound.
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

export function walkOf(scope: ListScope, active: ActiveFilters, rows: OrdersQuery): Walk {
  if (!ROW_TESTED.some((name) => active.has(name))) return { rows };
  const others = filterOrders(scope, { except: [...ROW_TESTED] });
  return {
    rows,
    nearest: (backwards, reach) =>
      filterOrders(scope, { from: nearestRows(scope.db, others, backwards, reach) }, filtersForRange(scope.db)),
  };
}

/** `total` must be the list's exact count, which its days sum to. */
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
 * How far a walk by a path reads before it falls back to the day counts: unbounded, a path only the
 * oldest orders have would read every row; reading the days for every such list costs every first page.
 */
const reachOf = (skip: number, take: number, shallowRows: number) => Math.max(shallowRows, 4 * (skip + take));

/** Fewer than `shallowRows` from the end, walks from it (within the reach when a path filters). */
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
