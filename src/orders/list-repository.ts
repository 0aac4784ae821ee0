import type { SelectQueryBuilder } from 'kysely';
import { applyListFilters, countOf, fetchPage, offsetOf, selectPageIds, type ListFilters, type Page, type Paging } from '../db/list.ts';
import { anyOf } from '../db/dialect.ts';
import type { Database, Db } from '../db/types.ts';
import { countChangedSince } from './projections/change-counts.ts';
import { countLiveOrders } from './projections/counts.ts';
import { countByProperty, FEW_CANDIDATES, pageFromSideTable, sideTableCondition, sideTableServes } from './projections/properties.ts';
import { catalogueColumn, type ListedOrder } from './render.ts';

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
 * The total comes from the maintained counts when the only filter on live orders is phase/status,
 * one property filter or a changed-since window (`order_counts`, `order_property_counts` or a count
 * of the property side table, `order_change_counts`); otherwise it is a `count(*)` that indexes
 * answer. Property filters on live orders use the side table `order_properties`; with
 * includeDeleted they keep the JSON functions, because soft-deleted orders are not in the side table.
 */
export async function listOrders<T>(
  db: Db, businessId: string, options: ListOrdersOptions, render: (orders: ListedOrder[]) => Promise<T[]>,
): Promise<Page<T>> {
  const property = options.property;
  const bySideTable = property !== null && !options.includeDeleted && sideTableServes(db, property);
  let query = applyListFilters(db, db.selectFrom('orders').where('business_id', '=', businessId),
    bySideTable ? { ...options, property: null } : options);
  if (bySideTable) query = query.where(sideTableCondition(db, businessId, property));
  if (options.phase) query = query.where('phase', '=', options.phase);
  // createdAt > t OR updatedAt > t is exactly updatedAt > t: updatedAt starts equal to createdAt
  // and only grows. So modifiedSince and updatedSince are both one range on the (business_id,
  // updated_at) index instead of an OR scan; given both, the later time is the range.
  const changedSince = [options.updatedSince, options.modifiedSince].filter((t) => t !== undefined).sort().at(-1);
  const unchanged = query;
  if (changedSince !== undefined) query = query.where('updated_at', '>', changedSince);

  // Live orders, filtered by at most one of: phase/status, one property filter, a changed-since window.
  const live = !options.includeDeleted && !options.createdSince;
  const byPhaseOrStatus = Boolean(options.phase || options.status);
  let total: number | undefined;
  if (live && changedSince === undefined && property === null) {
    total = await countLiveOrders(db, businessId, options.phase, options.status);
  } else if (live && changedSince === undefined && bySideTable && !byPhaseOrStatus) {
    total = await countByProperty(db, businessId, property);
  } else if (live && changedSince !== undefined && property === null && !byPhaseOrStatus) {
    total = await countChangedSince(db, businessId, changedSince);
  }

  // A value (or a present path) that few orders have, and no other filter: the page comes from
  // the side table's matches, sorted. Walking the page order's index instead, which is what the
  // planners choose for an ORDER BY ... LIMIT, would pass over the whole business to find no match.
  // The total is then exactly the number of those matches (the side table holds live orders only).
  let pageIds: (() => Promise<string[]>) | undefined;
  if (total !== undefined && bySideTable && property.exists !== false && total <= FEW_CANDIDATES) {
    pageIds = () => pageFromSideTable(db, businessId, property, options);
  } else if (changedSince !== undefined) {
    pageIds = () => pageChangedSince(unchanged, changedSince, options);
  }

  const count = total === undefined ? undefined : async () => total;
  return fetchPage(query.select(STUB).select(catalogueColumn(businessId)), options, render, count, pageIds, async (ids) => {
    // By primary key only: the ids were just selected with every filter. A row soft-deleted since
    // is left out, as it would have been a moment later; other changes show as they are now.
    const rows = await db.selectFrom('orders').select(STUB).select(catalogueColumn(businessId)).where(anyOf(db, 'id', ids)).execute();
    return rows.filter((r) => r.business_id === businessId && (options.includeDeleted || r.deleted_at === null));
  });
}

/**
 * The page's ids of the orders (of `query`) changed after `since`, without sorting every change in
 * the window. An order created after `since` has changed after it (updatedAt ≥ createdAt), and all
 * of those sort before any order created earlier, so the page is the newest such orders, read in
 * page order from the created_at index; only a page past them reads the earlier-created orders
 * changed in the window (a range of the updated_at index, sorted). Sorting the whole window instead
 * cost 2.7 ms at 1M orders (16.6k changes in 7 days), for every poll of the first page.
 */
async function pageChangedSince<O>(query: SelectQueryBuilder<Database, 'orders', O>, since: string, paging: Paging): Promise<string[]> {
  const offset = offsetOf(paging.page, paging.limit);
  const created = query.where('created_at', '>', since);
  const recent = await selectPageIds(created, paging.limit, offset);
  if (recent.length === paging.limit) return recent;
  // Short of a page: the created-after orders end on this page (or before it, when none came back).
  const createdAfter = recent.length > 0 ? offset + recent.length : await countOf(created);
  const older = query.where('created_at', '<=', since).where('updated_at', '>', since);
  return [...recent, ...await selectPageIds(older, paging.limit - recent.length, Math.max(0, offset - createdAfter))];
}
