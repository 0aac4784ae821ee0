import type { SelectQueryBuilder } from 'kysely';
import type { ListFilters, Paging } from '../../db/list.ts';
import type { Database, Db } from '../../db/types.ts';

/**
 * The shapes the order list's plan (plan.ts) and strategies (strategies.ts) share. The words are
 * the list's own; README.md in this folder says what each means.
 */

/** A list request: its filters and its paging (a page number, or a cursor's place). */
export interface ListOrdersOptions extends ListFilters, Paging {
  updatedSince?: string;
  modifiedSince?: string;
  phase?: string;
  /** The plan's size thresholds; DEFAULT_LIST_TUNING unless given. */
  tuning?: ListTuning;
}

/**
 * Below these sizes a cheaper plan wins: walking fewer than `shallowRows` rows costs less than
 * reading the day counts; up to `fewCandidates` orders matching a property are collected from the
 * side table and the other filters tested on them.
 */
export interface ListTuning {
  readonly shallowRows: number;
  readonly fewCandidates: number;
}

export type OrdersQuery = SelectQueryBuilder<Database, 'orders', object>;

export interface ListScope {
  db: Db;
  businessId: string;
  options: ListOrdersOptions;
}

export interface ListFilter {
  /** The query parameters it comes from. */
  keys: readonly string[];
  active: (scope: ListScope) => boolean;
  where: (query: OrdersQuery, scope: ListScope) => OrdersQuery;
  /** The condition when the filter is not set (includeDeleted: live orders only). */
  otherwise?: (query: OrdersQuery) => OrdersQuery;
  totals: readonly TotalStrategy[];
  pages: readonly PageStrategy[];
}

/** Totals other than `count(*)`, from maintained counts (src/orders/read-model). */
export type TotalStrategy =
  | 'countOrders'
  | 'countByProperty'
  | 'countChangedSince'
  | 'countByCreatedDay'
  | 'countFromSideTable'
  | 'countChangedSplit';
/** Pages other than the sorted filtered query. */
export type PageStrategy = 'pageFromSideTable' | 'pageChangedSince' | 'pageByCreatedDay';

/** The filters a request sets, by name (plan.ts `ORDER_FILTERS`). */
export type ActiveFilters = ReadonlyMap<string, ListFilter>;
