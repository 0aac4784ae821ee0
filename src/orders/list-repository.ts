import { applyListFilters, fetchPage, type ListFilters, type Page, type Paging } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { toOrder } from './mapper.ts';
import { loadOrderItems } from './repository.ts';
import type { Order } from './schema.ts';

export interface ListOrdersOptions extends ListFilters, Paging {
  updatedSince?: string;
  modifiedSince?: string;
  phase?: string;
}

/** A page of orders with their items: three queries (count, page, items with entries and variants). */
export async function listOrders(db: Db, businessId: string, options: ListOrdersOptions): Promise<Page<Order>> {
  let query = applyListFilters(db, db.selectFrom('orders').where('business_id', '=', businessId), options);
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  // createdAt > t OR updatedAt > t is exactly updatedAt > t: updatedAt starts equal to createdAt
  // and only grows. One range on the (business_id, updated_at) index instead of an OR scan.
  if (options.modifiedSince) query = query.where('updated_at', '>', options.modifiedSince);
  if (options.phase) query = query.where('phase', '=', options.phase);

  return fetchPage(query.selectAll(), options, async (rows) => {
    const items = await loadOrderItems(db, businessId, rows.map((r) => r.id));
    return rows.map((r) => toOrder(r, items.get(r.id) ?? []));
  });
}
