import { applyListFilters, fetchPage, type ListFilters, type Page, type Paging } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { countLiveOrders } from './counts.ts';
import type { OrderStub } from './mapper.ts';
import { countByProperty, fewCandidates, pageFromSideTable, sideTableCondition, sideTableServes } from './properties-index.ts';

const STUB = ['id', 'version', 'business_id', 'deleted_at'] as const;

export interface ListOrdersOptions extends ListFilters, Paging {
  updatedSince?: string;
  modifiedSince?: string;
  phase?: string;
}

/**
 * A page of orders: the total, the page's ids, their versions, and `render` for those (which
 * reads the rest of an order only when it has no rendering of that version; src/orders/render.ts).
 *
 * The total comes from the maintained counts when the only filters are phase/status or one
 * property filter on live orders (`order_counts`, `order_property_counts`, or a count of the
 * property side table); otherwise it is a `count(*)` that indexes answer. Property filters on
 * live orders use the side table `order_properties`; with includeDeleted they keep the JSON
 * functions, because soft-deleted orders are not in the side table.
 */
export async function listOrders<T>(
  db: Db, businessId: string, options: ListOrdersOptions, render: (orders: OrderStub[]) => Promise<T[]>,
): Promise<Page<T>> {
  const property = options.property;
  const bySideTable = property !== null && !options.includeDeleted && sideTableServes(db, property);
  let query = applyListFilters(db, db.selectFrom('orders').where('business_id', '=', businessId),
    bySideTable ? { ...options, property: null } : options);
  if (bySideTable) query = query.where(sideTableCondition(db, businessId, property));
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  // createdAt > t OR updatedAt > t is exactly updatedAt > t: updatedAt starts equal to createdAt
  // and only grows. One range on the (business_id, updated_at) index instead of an OR scan.
  if (options.modifiedSince) query = query.where('updated_at', '>', options.modifiedSince);
  if (options.phase) query = query.where('phase', '=', options.phase);

  const onlyLive = !options.includeDeleted && !options.createdSince && !options.updatedSince && !options.modifiedSince;
  const live = () => countLiveOrders(db, businessId, options.phase, options.status);
  let count: (() => Promise<number>) | undefined;
  if (onlyLive && property === null) count = live;
  else if (onlyLive && bySideTable && !options.phase && !options.status) count = () => countByProperty(db, businessId, property, live);

  // A value (or a present path) that few orders have, and no other filter: the page comes from
  // the side table's matches, sorted. Walking the page order's index instead, which is what the
  // planners choose for an ORDER BY ... LIMIT, would pass over the whole business to find no match.
  let pageIds: (() => Promise<string[]>) | undefined;
  if (count !== undefined && bySideTable && property.exists !== false && await fewCandidates(db, businessId, property)) {
    pageIds = () => pageFromSideTable(db, businessId, property, options);
  }

  return fetchPage(query.select(STUB), options, render, count, pageIds, async (ids) => {
    // By primary key only: the ids were just selected with every filter. A row soft-deleted since
    // is left out, as it would have been a moment later; other changes show as they are now.
    const rows = await db.selectFrom('orders').select(STUB).where('id', 'in', ids).execute();
    return rows.filter((r) => r.business_id === businessId && (options.includeDeleted || r.deleted_at === null));
  });
}
