import { sql } from 'kysely';
import { beforeInListOrder, propertyCondition } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { whereLive } from '../../db/live.ts';
import { jsonOnRowsBeatsProbes } from '../../db/dialect.ts';
import { sideTableCondition, sideTableServes } from './property-reads.ts';
import type { ActiveFilters, ListFilter, ListOrdersOptions, ListScope, OrdersQuery } from './types.ts';

export type { ListFilter, ListOrdersOptions, ListScope, OrdersQuery } from './types.ts';

/**
 * The plan of an order list: which filters a request sets, and from those, how its total and its
 * page are read. Every filter is declared once in ORDER_FILTERS with the strategies that can serve
 * it; a strategy is chosen only when every active filter declares it (an allow-list), so a filter
 * or a combination no strategy declares gets the exact general plan (`count(*)`, the sorted
 * query), never a shortcut that would ignore it. docs/performance.md says why each strategy exists.
 */
/**
 * createdAt > t OR updatedAt > t is exactly updatedAt > t: updatedAt starts equal to createdAt and
 * only grows. So modifiedSince and updatedSince are both one range on the (business_id, updated_at)
 * index instead of an OR scan; given both, the later time is the range.
 */
export const changedSinceOf = (options: ListOrdersOptions): string | undefined =>
  [options.updatedSince, options.modifiedSince]
    .filter((t) => t !== undefined)
    .sort()
    .at(-1);

/** updatedAt >= createdAt, so createdAt > t already means updatedAt > u when u <= t (both are normalised ISO times). */
const impliedByCreatedSince = (options: ListOrdersOptions) =>
  options.createdSince !== undefined && changedSinceOf(options)! <= options.createdSince;

/** The side tables (live and deleted orders) hold every path but, on PostgreSQL, array steps (sideTableServes). */
const bySideTable = ({ db, options }: ListScope) => options.property !== null && sideTableServes(db, options.property);
const sideTableWhere = (query: OrdersQuery, { db, businessId, options }: ListScope) =>
  query.where(sideTableCondition(db, businessId, options.property!, options.includeDeleted));
/** The property filter by the JSON functions on the order's own row. */
const jsonWhere = (query: OrdersQuery, { db, options }: ListScope) =>
  query.where(propertyCondition(db, sql.ref('properties'), options.property!));

/** Every strategy but the side table's page reads whatever query it is given, so it serves every filter. */
const ANY_PAGE = ['pageChangedSince'] as const;
/** The changed-since split plans each of its parts with every filter, so it serves every filter. */
const ANY = 'countChangedSplit';

/** In the order of the conditions in the SQL. */
export const ORDER_FILTERS = {
  // Deleted orders are counted and indexed beside the live ones (the order_deleted_* tables).
  includeDeleted: {
    keys: ['includeDeleted'],
    active: ({ options }) => options.includeDeleted,
    where: (query) => query,
    otherwise: (query) => query.where(whereLive()),
    totals: ['countOrders', 'countByProperty', 'countChangedSince', 'countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageByCreatedDay', 'pageFromSideTable', ...ANY_PAGE],
  },
  createdSince: {
    keys: ['createdSince'],
    active: ({ options }) => options.createdSince !== undefined,
    where: (query, { options }) => query.where('created_at', '>', options.createdSince!),
    totals: ['countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageByCreatedDay', 'pageFromSideTable', ...ANY_PAGE],
  },
  status: {
    keys: ['status'],
    active: ({ options }) => Boolean(options.status),
    where: (query, { options }) => query.where('status', '=', options.status!),
    totals: ['countOrders', 'countByProperty', 'countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageByCreatedDay', 'pageFromSideTable', ...ANY_PAGE],
  },
  // A value, through the side table.
  propertyValue: {
    keys: ['propertyPath', 'propertyValue'],
    active: (scope) => bySideTable(scope) && scope.options.property!.value !== undefined,
    where: sideTableWhere,
    totals: ['countByProperty', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', ...ANY_PAGE],
  },
  // A present path (propertyPath alone, or with propertyExists=true), through the side table.
  propertyPresent: {
    keys: ['propertyPath', 'propertyExists'],
    active: (scope) =>
      bySideTable(scope) && scope.options.property!.value === undefined && scope.options.property!.exists !== false,
    where: sideTableWhere,
    totals: ['countByProperty', 'countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', 'pageByCreatedDay', ...ANY_PAGE],
  },
  // An absent path (exists=false), through the side table; paths are counted per created day too.
  propertyAbsent: {
    keys: ['propertyPath', 'propertyExists'],
    active: (scope) => bySideTable(scope) && scope.options.property!.exists === false,
    where: sideTableWhere,
    totals: ['countByProperty', 'countByCreatedDay', ANY],
    pages: ['pageByCreatedDay', ...ANY_PAGE],
  },
  // Any property filter the side table cannot answer, by the JSON functions.
  propertyJson: {
    keys: ['propertyPath', 'propertyValue', 'propertyExists'],
    active: (scope) => scope.options.property !== null && !bySideTable(scope),
    where: jsonWhere,
    totals: [ANY],
    pages: ANY_PAGE,
  },
  phase: {
    keys: ['phase'],
    active: ({ options }) => Boolean(options.phase),
    where: (query, { options }) => query.where('phase', '=', options.phase!),
    totals: ['countOrders', 'countByProperty', 'countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageByCreatedDay', 'pageFromSideTable', ...ANY_PAGE],
  },
  // Not set when createdSince implies it: createdAt > t implies updatedAt > u for any u <= t.
  changedSince: {
    keys: ['updatedSince', 'modifiedSince'],
    active: ({ options }) => changedSinceOf(options) !== undefined && !impliedByCreatedSince(options),
    where: (query, { options }) => query.where('updated_at', '>', changedSinceOf(options)!),
    totals: ['countChangedSince', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', ...ANY_PAGE],
  },
  // A cursor's place: the orders after it in the list order, read forward from it (listOrders).
  // Only for the page: the total is the list's without it. The strategies that place a page by
  // counting rows (days, the changed-since split) cannot start at a place, so they do not declare it.
  after: {
    keys: ['cursor'],
    active: ({ options }) => options.after !== undefined,
    where: (query, { options }) => query.where(beforeInListOrder(options.after!, 'orders')),
    totals: [],
    pages: ['pageFromSideTable'],
  },
} satisfies Record<string, ListFilter>;

export type OrderFilterName = keyof typeof ORDER_FILTERS;

/** The filters of a walk by created day that no index on orders serves: a walk tests them row by row (days.ts `nearestRows`). */
export const ROW_TESTED: readonly OrderFilterName[] = ['propertyPresent', 'propertyAbsent'];

const ROW_FILTERS: Record<string, ListFilter> = {
  ...ORDER_FILTERS,
  propertyValue: { ...ORDER_FILTERS.propertyValue, where: jsonWhere },
  propertyPresent: { ...ORDER_FILTERS.propertyPresent, where: jsonWhere },
  propertyAbsent: { ...ORDER_FILTERS.propertyAbsent, where: jsonWhere },
};

/**
 * The filters for a query that passes over a short range of rows: the older part of a
 * changed-since split, the rows of the day a page starts in, a walk of fewer than `shallowRows`
 * from a list's end, and the count of a createdSince's own day. Where testing each row's JSON costs
 * less than a probe of the side table per row (PostgreSQL, jsonOnRowsBeatsProbes), the property
 * filter is tested on the JSON there; SQLite keeps the side table. Both answer alike wherever the
 * side table serves (sideTableServes).
 */
export const filtersForRange = (db: Db): Record<string, ListFilter> =>
  jsonOnRowsBeatsProbes(db) ? ROW_FILTERS : ORDER_FILTERS;
/** The filters a request sets. */
export function activeFilters(scope: ListScope, filters: Record<string, ListFilter> = ORDER_FILTERS): ActiveFilters {
  return new Map(Object.entries(filters).filter(([, filter]) => filter.active(scope)));
}

/**
 * The business's orders with every filter's condition, but those named in `except`; from `from`
 * when given (orders joined to the rows that already decide a filter), else from `orders`.
 */
export function filterOrders(
  scope: ListScope,
  { except = [], from }: { except?: string[]; from?: OrdersQuery } = {},
  filters: Record<string, ListFilter> = ORDER_FILTERS,
): OrdersQuery {
  let query: OrdersQuery = (from ?? scope.db.selectFrom('orders')).where('business_id', '=', scope.businessId);
  for (const [name, filter] of Object.entries(filters)) {
    if (except.includes(name)) continue;
    if (filter.active(scope)) query = filter.where(query, scope);
    else if (filter.otherwise) query = filter.otherwise(query);
  }
  return query;
}
