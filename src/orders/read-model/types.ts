import type { SelectQueryBuilder } from 'kysely';
import type { ListFilters, Paging } from '../../db/list.ts';
import type { Database, Db } from '../../db/types.ts';

/** The shapes the list's plan and strategies share; README.md defines the words. */

export interface ListOrdersOptions extends ListFilters, Paging {
  updatedSince?: string;
  modifiedSince?: string;
  phase?: string;
  /** The plan's size thresholds; DEFAULT_LIST_TUNING unless given. */
  tuning?: ListTuning;
}

/** Below these sizes a cheaper plan wins: a walk instead of the day counts; collecting the candidates. */
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

export type TotalStrategy =
  | 'countOrders'
  | 'countByProperty'
  | 'countChangedSince'
  | 'countByCreatedDay'
  | 'countFromSideTable'
  | 'countChangedSplit';
export type PageStrategy = 'pageFromSideTable' | 'pageChangedSince' | 'pageByCreatedDay';

export type ActiveFilters = ReadonlyMap<string, ListFilter>;
