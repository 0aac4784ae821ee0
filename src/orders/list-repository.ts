import { sql } from 'kysely';
import { offsetOf, propertyCondition, type Page, type PropertyFilter } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { toOrder } from './mapper.ts';
import { loadOrderItems } from './repository.ts';
import type { Order } from './schema.ts';

export interface ListOrdersOptions {
  page: number;
  limit: number;
  includeDeleted: boolean;
  createdSince?: string;
  updatedSince?: string;
  modifiedSince?: string;
  phase?: string;
  status?: string;
  property: PropertyFilter | null;
}

/** A page of orders with their items: three queries (count, page, items with entries and variants). */
export async function listOrders(db: Db, businessId: string, options: ListOrdersOptions): Promise<Page<Order>> {
  let query = db.selectFrom('orders').where('business_id', '=', businessId);
  if (!options.includeDeleted) query = query.where('deleted_at', 'is', null);
  if (options.createdSince) query = query.where('created_at', '>', options.createdSince);
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  // createdAt > t OR updatedAt > t is exactly updatedAt > t: updatedAt starts equal to createdAt
  // and only grows. One range on the (business_id, updated_at) index instead of an OR scan.
  if (options.modifiedSince) query = query.where('updated_at', '>', options.modifiedSince);
  if (options.phase) query = query.where('phase', '=', options.phase);
  if (options.status) query = query.where('status', '=', options.status);
  if (options.property) query = query.where(propertyCondition(db, sql.ref('properties'), options.property));

  const { total } = await query.select((eb) => eb.fn.countAll().as('total')).executeTakeFirstOrThrow();
  const rows = await query.selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(options.limit).offset(offsetOf(options.page, options.limit))
    .execute();
  const items = await loadOrderItems(db, businessId, rows.map((r) => r.id));
  return {
    items: rows.map((r) => toOrder(r, items.get(r.id) ?? [])),
    total: Number(total),
    page: options.page,
    pageSize: options.limit,
  };
}
