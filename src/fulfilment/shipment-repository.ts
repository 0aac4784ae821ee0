import { sql, type Insertable, type Selectable, type SqlBool, type Updateable } from 'kysely';
import { anyOf, forUpdate, notIndexed } from '../db/dialect.ts';
import {
  applyListFilters,
  beforeInListOrder,
  countOf,
  fetchPage,
  nextOf,
  offsetOf,
  pastTheEnd,
  type Page,
  type Paging,
  type PropertyFilter,
} from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { Shipment } from './shipment-schema.ts';
import type { ShipmentTable } from './table.ts';
import { countShipments, countShipmentChange } from './shipment-counts.ts';

export type ShipmentRow = Selectable<ShipmentTable>;

export function toShipment(row: ShipmentRow): Shipment {
  return {
    id: row.id,
    orderId: row.order_id,
    status: row.status as Shipment['status'],
    shippedAt: toIso(row.shipped_at),
    deliveredAt: toIso(row.delivered_at),
    expectedDeliveryAt: toIso(row.expected_delivery_at),
    carrier: readJson<Shipment['carrier']>(row.carrier),
    service: row.service,
    trackingNumbers: readJson<string[]>(row.tracking_numbers) ?? [],
    externalReference: row.external_reference,
    properties: readJson(row.properties),
    packages: readJson<Shipment['packages']>(row.packages) ?? [],
    lines: readJson<Shipment['lines']>(row.lines) ?? [],
    version: Number(row.version),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    voidedAt: toIso(row.voided_at),
  };
}

/** Every write of a shipment goes through these two, which keep its counts (./shipment-counts.ts) in the same transaction. */
export async function insertShipment(db: Db, row: Insertable<ShipmentTable>): Promise<ShipmentRow> {
  const inserted = await db.insertInto('shipments').values(row).returningAll().executeTakeFirstOrThrow();
  await countShipmentChange(db, inserted.business_id, null, inserted);
  return inserted;
}

/** `before`: the shipment's row as read under its lock. */
export async function updateShipmentRow(
  db: Db,
  before: ShipmentRow,
  set: Updateable<ShipmentTable>,
): Promise<ShipmentRow> {
  const updated = await db
    .updateTable('shipments')
    .set(set)
    .where('business_id', '=', before.business_id)
    .where('id', '=', before.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await countShipmentChange(db, before.business_id, before, updated);
  return updated;
}

/** A shipment of this business; with `lock`, its row stays locked until the transaction ends. */
export async function findShipmentRow(db: Db, businessId: string, id: string, lock = false) {
  const query = db.selectFrom('shipments').selectAll().where('business_id', '=', businessId).where('id', '=', id);
  return (lock ? forUpdate(db, query) : query).executeTakeFirst();
}

/** The order's shipments, oldest first. */
export async function findOrderShipmentRows(db: Db, businessId: string, orderId: string): Promise<ShipmentRow[]> {
  return db
    .selectFrom('shipments')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('order_id', '=', orderId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export interface ListShipmentsOptions extends Paging {
  orderId?: string;
  status?: string;
  createdSince?: string;
  modifiedSince?: string;
  property: PropertyFilter | null;
}

/**
 * A page of shipments, newest first; `modifiedSince` is `updated_at >` (a create sets updated_at = created_at).
 * The total is read from the maintained counts (./shipment-counts.ts) unless the list is of one order
 * (counted by its index: that order's shipments) or filtered by a property (counted as the page reads:
 * no count table holds the shipments' properties).
 */
export async function listShipments(
  db: Db,
  businessId: string,
  options: ListShipmentsOptions,
): Promise<Page<Shipment>> {
  let query = applyListFilters(db, db.selectFrom('shipments').where('business_id', '=', businessId), {
    ...options,
    includeDeleted: true,
  });
  if (options.orderId) query = query.where('order_id', '=', options.orderId);
  const total = options.orderId || options.property ? undefined : await countShipments(db, businessId, options);
  if (options.modifiedSince) return changedPage(db, businessId, query, options.modifiedSince, options, total);
  return fetchPage(query.selectAll(), options, async (rows) => rows.map(toShipment), undefined, total);
}

type ShipmentsQuery = ReturnType<typeof shipmentsOf>;
const shipmentsOf = (db: Db) => db.selectFrom('shipments');
type Stub = Pick<ShipmentRow, 'id' | 'created_at'>;
const listOrder = (a: Stub, b: Stub) => {
  const [x, y] = [toIso(a.created_at)!, toIso(b.created_at)!];
  return x !== y ? (x < y ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
};

/**
 * A page of the shipments changed since `since`, in two parts read each by its index and merged:
 * those created after it (all changed since, as updated_at >= created_at), the created index
 * walked in list order for a page's rows; and those created before it and changed since, from
 * the (updated_at, created_at) index. Both read only ids and created times (from the index alone
 * where no other filter needs the row), then the page's rows by id. So a page costs its rows and
 * the window's index entries, never a walk of the older shipments that did not change, nor a read
 * of the window's rows.
 */
async function changedPage(
  db: Db,
  businessId: string,
  query: ShipmentsQuery,
  since: string,
  paging: Paging,
  counted: number | undefined,
): Promise<Page<Shipment>> {
  const changed = query.where(sql<SqlBool>`${sql.ref('updated_at')} > ${since}`);
  const total = counted ?? (await countOf(changed));
  const empty = { items: [], total, page: paging.page, pageSize: paging.limit, next: null };
  if (!paging.after && pastTheEnd(total, paging)) return empty;
  const skip = paging.after ? 0 : offsetOf(paging.page, paging.limit);
  const take = skip + paging.limit;
  const recent = await (paging.after ? query.where(beforeInListOrder(paging.after)) : query)
    .where(sql<SqlBool>`${sql.ref('created_at')} > ${since}`)
    .select(['id', 'created_at'])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(take)
    .execute();
  // A first walk (since before the first shipment) has no older part, and need not scan the window for one.
  const first = await db
    .selectFrom('shipments')
    .select('created_at')
    .where('business_id', '=', businessId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (!first || toIso(first.created_at)! > since) return pageOf(db, businessId, recent, skip, paging, total);
  // created_at kept from leading the plan (SQLite would walk the created index back to the first shipment to skip a sort).
  const created = notIndexed(db, 'created_at');
  const older = await (paging.after
    ? changed.where(sql<SqlBool>`(${created}, ${sql.ref('id')}) < (${paging.after.createdAt}, ${paging.after.id})`)
    : changed
  )
    .where(sql<SqlBool>`${created} <= ${since}`)
    .select(['id', 'created_at'])
    .orderBy(created, 'desc')
    .orderBy('id', 'desc')
    .limit(take)
    .execute();
  return pageOf(db, businessId, [...recent, ...older].sort(listOrder), skip, paging, total);
}

async function pageOf(
  db: Db,
  businessId: string,
  sorted: Stub[],
  skip: number,
  paging: Paging,
  total: number,
): Promise<Page<Shipment>> {
  const rows = sorted.slice(skip, skip + paging.limit);
  const found =
    rows.length === 0
      ? []
      : await db
          .selectFrom('shipments')
          .selectAll()
          .where('business_id', '=', businessId)
          .where(
            anyOf(
              db,
              'id',
              rows.map((r) => r.id),
            ),
          )
          .execute();
  const byId = new Map(found.map((row) => [row.id, row]));
  return {
    items: rows.map((r) => toShipment(byId.get(r.id)!)),
    total,
    page: paging.page,
    pageSize: paging.limit,
    next: nextOf(rows, paging, total),
  };
}

/** Shipments of the business after `afterId`, in id order: one page of an export. */
export async function exportShipments(db: Db, businessId: string, afterId: string, limit: number): Promise<Shipment[]> {
  const rows = await db
    .selectFrom('shipments')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toShipment);
}
