import type { Db } from '../db/types.ts';
import type { RenderCache } from '../lib/render-cache.ts';
import { toOrder, type OrderStub } from './mapper.ts';
import { findOrder, findOrderRows } from './repository.ts';
import { loadOrderItems } from './items-repository.ts';
import type { Order } from './schema.ts';
import { readOrderVersion } from './shared-reads.ts';

/**
 * Rendered orders are cached under their `version`, which every change to the order's row or items
 * raises. The version is read no later than the rows, so newer data can be cached under an older
 * version, never the reverse, and such an entry is never matched again.
 */
export type SerializeOrder = (order: Order) => string;

/**
 * The JSON in an allocation of its own: `Buffer.from` puts a text under 4 kB into a slice of a
 * shared 8 kB slab, and a cached slice kept its whole slab alive (docs/decisions/0048-memory-budget.md).
 */
function render(serialize: SerializeOrder, order: Order): Buffer {
  const text = serialize(order);
  const json = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  json.write(text);
  return json;
}

const keyOf = (businessId: string, orderId: string) => `${businessId}/${orderId}`;
const stampOf = (version: number | string) => String(Number(version));

/** A live order's JSON bytes and version, from the cache when its stamp is current; one query then. */
export async function renderOrder(
  db: Db,
  cache: RenderCache,
  businessId: string,
  id: string,
  serialize: SerializeOrder,
): Promise<{ json: Buffer; version: number } | undefined> {
  if (!cache.enabled) {
    const order = await findOrder(db, businessId, id);
    return order && { json: render(serialize, order), version: order.version };
  }
  // On a cache hit this is the request's only query (shared with other requests' on PostgreSQL).
  const version = await readOrderVersion(db, businessId, id);
  if (version === undefined) return undefined;
  const key = keyOf(businessId, id);
  const cached = cache.get(key, stampOf(version));
  if (cached !== undefined) return { json: cached, version };

  const order = await findOrder(db, businessId, id);
  if (!order) return undefined;
  const json = render(serialize, order);
  cache.set(key, stampOf(order.version), json);
  return { json, version: order.version };
}

/**
 * The JSON bytes of a page of orders, in order: those rendered at their current version as they
 * are, the rest read and rendered with their items in two queries. An order soft-deleted since
 * the page was chosen is left out, as the page would have left it out a moment later.
 */
export async function renderOrders(
  db: Db,
  cache: RenderCache,
  businessId: string,
  stubs: OrderStub[],
  serialize: SerializeOrder,
): Promise<Buffer[]> {
  if (stubs.length === 0) return [];
  const json = stubs.map((stub) => cache.get(keyOf(businessId, stub.id), stampOf(stub.version)));
  const missing = stubs.filter((_, i) => json[i] === undefined).map((stub) => stub.id);
  if (missing.length === 0) return json as Buffer[];

  const rows = await findOrderRows(db, businessId, missing);
  const items = await loadOrderItems(db, businessId, [...rows.keys()]);
  return stubs.flatMap((stub, i) => {
    if (json[i] !== undefined) return [json[i]];
    const row = rows.get(stub.id);
    if (!row || (stub.deleted_at === null && row.deleted_at !== null)) return [];
    const rendered = render(serialize, toOrder(row, items.get(row.id) ?? []));
    cache.set(keyOf(businessId, row.id), stampOf(row.version), rendered);
    return [rendered];
  });
}
