import { sql } from 'kysely';
import { beforeInListOrder, propertyCondition } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { whereLive } from '../../db/live.ts';
import { jsonOnRowsBeatsProbes } from '../../db/dialect.ts';
import { sideTableCondition, sideTableServes } from './property-reads.ts';
import type { ActiveFilters, ListFilter, ListOrdersOptions, ListScope, OrdersQuery } from './types.ts';

export type { ListFilter, ListOrdersOptions, ListScope, OrdersQuery } from './types.ts';

/**
 * The filters of an order list, each declared once with the strategies that can serve it. A
 * strategy is chosen only when every active filter declares it (an allow-list), so an undeclared
 * filter or combination gets the exact general plan, never a shortcut that would ignore it.
 */

/**
 * createdAt > t OR updatedAt > t is exactly updatedAt > t (updatedAt starts at createdAt and only
 * grows), so modifiedSince and updatedSince are one index range; given both, the later one.
 */
export const changedSinceOf = (options: ListOrdersOptions): string | undefined =>
  [options.updatedSince, options.modifiedSince]
    .filter((t) => t !== undefined)
    .sort()
    .at(-1);

/** updatedAt >= createdAt, so createdAt > t already means updatedAt > u when u <= t (both are normalised ISO times). */
const impliedByCreatedSince = (options: ListOrdersOptions) =>
  options.createdSince !== undefined && changedSinceOf(options)! <= options.createdSince;

const bySideTable = ({ db, options }: ListScope) => options.property !== null && sideTableServes(db, options.property);
const sideTableWhere = (query: OrdersQuery, { db, businessId, options }: ListScope) =>
  query.where(sideTableCondition(db, businessId, options.property!, options.includeDeleted));
const jsonWhere = (query: OrdersQuery, { db, options }: ListScope) =>
  query.where(propertyCondition(db, sql.ref('properties'), options.property!));

/** The changed-since split plans its parts with every filter, so it serves any filter. */
const ANY_PAGE = ['pageChangedSince'] as const;
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
  propertyValue: {
    keys: ['propertyPath', 'propertyValue'],
    active: (scope) => bySideTable(scope) && scope.options.property!.value !== undefined,
    where: sideTableWhere,
    totals: ['countByProperty', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', ...ANY_PAGE],
  },
  propertyPresent: {
    keys: ['propertyPath', 'propertyExists'],
    active: (scope) =>
      bySideTable(scope) && scope.options.property!.value === undefined && scope.options.property!.exists !== false,
    where: sideTableWhere,
    totals: ['countByProperty', 'countByCreatedDay', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', 'pageByCreatedDay', ...ANY_PAGE],
  },
  propertyAbsent: {
    keys: ['propertyPath', 'propertyExists'],
    active: (scope) => bySideTable(scope) && scope.options.property!.exists === false,
    where: sideTableWhere,
    totals: ['countByProperty', 'countByCreatedDay', ANY],
    pages: ['pageByCreatedDay', ...ANY_PAGE],
  },
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
  changedSince: {
    keys: ['updatedSince', 'modifiedSince'],
    active: ({ options }) => changedSinceOf(options) !== undefined && !impliedByCreatedSince(options),
    where: (query, { options }) => query.where('updated_at', '>', changedSinceOf(options)!),
    totals: ['countChangedSince', 'countFromSideTable', ANY],
    pages: ['pageFromSideTable', ...ANY_PAGE],
  },
  // Page only (the total ignores it); strategies that place a page by counting rows cannot start at a place.
  after: {
    keys: ['cursor'],
    active: ({ options }) => options.after !== undefined,
    where: (query, { options }) => query.where(beforeInListOrder(options.after!, 'orders')),
    totals: [],
    pages: ['pageFromSideTable'],
  },
} satisfies Record<string, ListFilter>;

export type OrderFilterName = keyof typeof ORDER_FILTERS;

/** Filters no index on orders serves: a walk by created day tests them row by row. */
export const ROW_TESTED: readonly OrderFilterName[] = ['propertyPresent', 'propertyAbsent'];

const ROW_FILTERS: Record<string, ListFilter> = {
  ...ORDER_FILTERS,
  propertyValue: { ...ORDER_FILTERS.propertyValue, where: jsonWhere },
  propertyPresent: { ...ORDER_FILTERS.propertyPresent, where: jsonWhere },
  propertyAbsent: { ...ORDER_FILTERS.propertyAbsent, where: jsonWhere },
};

/**
 * For queries over a short range of rows, where testing each row's JSON can beat a probe of the
 * side table per row (jsonOnRowsBeatsProbes). Both answer alike wherever the side table serves.
 */
export const filtersForRange = (db: Db): Record<string, ListFilter> =>
  jsonOnRowsBeatsProbes(db) ? ROW_FILTERS : ORDER_FILTERS;
export function activeFilters(scope: ListScope, filters: Record<string, ListFilter> = ORDER_FILTERS): ActiveFilters {
  return new Map(Object.entries(filters).filter(([, filter]) => filter.active(scope)));
}

/** `from`: orders joined to the rows that already decide a filter. */
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
