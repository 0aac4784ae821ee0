import { sql } from 'kysely';
import { anyOf } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import { CATALOGUE_COUNTER as CATALOGUE } from '../items/variant-repository.ts';
import type { RenderCache } from '../lib/render-cache.ts';
import { toOrder, type OrderStub } from './mapper.ts';
import { findOrder, findOrderRows, loadOrderItems } from './repository.ts';
import type { Order } from './schema.ts';
import { whereLive } from '../db/live.ts';

/**
 * Rendered orders are cached (src/lib/render-cache.ts) under a stamp of everything their JSON is
 * made of: the order's `version`, which every change to the order or its items raises, and the
 * business's catalogue version, which every change to a variant's name or SKU raises (the only
 * data from other rows in an order's JSON; an entry's variant and item ids never change).
 *
 * A stamp's parts are read no later than the data they cover (the version with the order row, the
 * catalogue version before the items), so data newer than its stamp can be cached under an older
 * stamp, never the reverse; versions only grow, so such an entry is simply never matched again.
 */
export type SerializeOrder = (order: Order) => string;

const render = (serialize: SerializeOrder, order: Order) => Buffer.from(serialize(order));

/**
 * The business's catalogue version as a column, so that a list reads it in the statement that
 * reads its orders' versions (no query of its own).
 */
export const catalogueColumn = (businessId: string) =>
  sql<number | string | null>`(select value from business_counters where business_id = ${businessId} and name = ${CATALOGUE})`.as('catalogue');

/** An order of a list page: its stub and the catalogue version read with it. */
export type ListedOrder = OrderStub & { catalogue: number | string | null };

const STUB = ['id', 'version', 'business_id', 'deleted_at'] as const;

/**
 * The stubs of `ids`, in that order, by primary key only: the ids were just selected with every
 * filter, and those filters can lead a planner without statistics to scan an index of the whole
 * business instead of looking up 20 keys. A row soft-deleted since is left out, as it would have
 * been a moment later; other changes show as they are now.
 */
export async function findListedOrders(db: Db, businessId: string, ids: string[], includeDeleted: boolean): Promise<ListedOrder[]> {
  const rows = await db.selectFrom('orders').select(STUB).select(catalogueColumn(businessId)).where(anyOf(db, 'id', ids)).execute();
  const byId = new Map(rows.filter((r) => r.business_id === businessId && (includeDeleted || r.deleted_at === null)).map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r) => r !== undefined);
}

const keyOf = (businessId: string, orderId: string) => `${businessId}/${orderId}`;
const stampOf = (version: number | string, catalogue: number) => `${Number(version)}/${catalogue}`;

/** A live order's JSON bytes and version, from the cache when its stamp is current; one query then. */
export async function renderOrder(
  db: Db, cache: RenderCache, businessId: string, id: string, serialize: SerializeOrder,
): Promise<{ json: Buffer; version: number } | undefined> {
  if (!cache.enabled) {
    const order = await findOrder(db, businessId, id);
    return order && { json: render(serialize, order), version: order.version };
  }
  // Raw SQL: on a cache hit this is the request's only query, and building it with the query
  // builder cost as much as running it.
  const { rows: [stamp] } = await sql<{ version: number | string; catalogue: number | string | null }>`select version,
      ${catalogueColumn(businessId)} from orders where business_id = ${businessId} and id = ${id} and ${whereLive()}`.execute(db);
  if (!stamp) return undefined;
  const catalogue = Number(stamp.catalogue ?? 0);
  const key = keyOf(businessId, id);
  const cached = cache.get(key, stampOf(stamp.version, catalogue));
  if (cached !== undefined) return { json: cached, version: Number(stamp.version) };

  const order = await findOrder(db, businessId, id);
  if (!order) return undefined;
  const json = render(serialize, order);
  cache.set(key, stampOf(order.version, catalogue), json);
  return { json, version: order.version };
}

/**
 * The JSON bytes of a page of orders, in order: those rendered at their current version as they
 * are, the rest read and rendered with their items in two queries. An order soft-deleted since
 * the page was chosen is left out, as the page would have left it out a moment later.
 */
export async function renderOrders(
  db: Db, cache: RenderCache, businessId: string, stubs: ListedOrder[], serialize: SerializeOrder,
): Promise<Buffer[]> {
  if (stubs.length === 0) return [];
  const catalogue = Number(stubs[0].catalogue ?? 0);
  const json = stubs.map((stub) => cache.get(keyOf(businessId, stub.id), stampOf(stub.version, catalogue)));
  const missing = stubs.filter((_, i) => json[i] === undefined).map((stub) => stub.id);
  if (missing.length === 0) return json as Buffer[];

  const rows = await findOrderRows(db, businessId, missing);
  const items = await loadOrderItems(db, businessId, [...rows.keys()]);
  return stubs.flatMap((stub, i) => {
    if (json[i] !== undefined) return [json[i]];
    const row = rows.get(stub.id);
    if (!row || (stub.deleted_at === null && row.deleted_at !== null)) return [];
    const rendered = render(serialize, toOrder(row, items.get(row.id) ?? []));
    cache.set(keyOf(businessId, row.id), stampOf(row.version, catalogue), rendered);
    return [rendered];
  });
}
