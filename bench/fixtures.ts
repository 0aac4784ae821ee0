import { createHash } from 'node:crypto';
import type { Credentials } from './server.ts';

interface OrderLike {
  id: string;
  orderItems: Array<{ id: string }>;
  properties: Record<string, any> | null;
}

/** What the scenarios need, found through the API itself. */
export interface Fixtures {
  headers: Record<string, string>;
  businessId: string;
  /** An order with exactly 10 items. */
  tenItemOrderId: string;
  /** Orders with their first item, for PATCH. */
  patchTargets: Array<{ id: string; itemId: string }>;
  /** Order ids with the ingestion idempotency key. */
  ingestTargets: Array<{ id: string; key: string }>;
  salesOrderNumbers: string[];
  modifiedSince: string;
  buyerId: string;
  variantIds: string[];
  /** The business's last event sequence when the run started. */
  lastSequence: number;
  /** Another order of 10 items, acknowledged by the fixtures (its GET carries the acknowledgement summary). */
  acknowledgedOrderId: string;
  /** A mirror's window over shipments (7 days back), and the cursors of that walk's pages of 100 after the first. */
  shipmentsSince: string;
  shipmentCursors: string[];
  /** The cursors of a walk over every shipment (modifiedSince far back), pages of 100, at most 50. */
  allShipmentCursors: string[];
}

/** The nextCursor of each page after the first of `path` (a list), at most `max`. */
async function cursorsOf(get: (path: string) => Promise<any>, path: string, max: number): Promise<string[]> {
  const cursors: string[] = [];
  for (let page = await get(path); page.nextCursor && cursors.length < max; ) {
    cursors.push(page.nextCursor);
    page = await get(`${path}&cursor=${encodeURIComponent(page.nextCursor)}`);
  }
  return cursors;
}

export async function loadFixtures(base: string, credentials: Credentials): Promise<Fixtures> {
  const headers = { 'x-business-id': credentials.businessId, 'x-api-key': credentials.apiKey };
  const get = async (path: string) => {
    const res = await fetch(`${base}/api/v1${path}`, { headers });
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  // Demo orders, not the benchmark's own: a reused database's newest orders are the ones earlier
  // runs created (PENDING, 5 items each), and demo data has ACTIVE orders among its newest.
  let orders: OrderLike[] = [];
  const tens = () => orders.filter((o) => o.orderItems.length === 10).length;
  for (const filter of ['&phase=ACTIVE', '']) {
    orders = [];
    for (let page = 1; page <= 20 && (page === 1 || tens() < 2); page++) {
      orders.push(...(await get(`/orders?limit=100&page=${page}${filter}`)).items);
    }
    if (tens() >= 2) break;
  }
  const [ten, acknowledged] = orders.filter((o) => o.orderItems.length === 10);
  if (!acknowledged) throw new Error('no two orders with 10 items among the newest 2,000');
  // Acknowledged with changes (the first line backordered), unless an earlier run of a reused database did.
  const acks = await get(`/orders/${acknowledged.id}/acknowledgements`);
  if (acks.items.length === 0) {
    const res = await fetch(`${base}/api/v1/orders/${acknowledged.id}/acknowledgements`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ lines: [{ orderItemId: acknowledged.orderItems[0].id, decision: 'BACKORDERED' }] }),
    });
    if (res.status !== 201) throw new Error(`acknowledging ${acknowledged.id}: ${res.status} ${await res.text()}`);
  }
  const shipmentsSince = new Date(Date.now() - 7 * 86_400_000).toISOString();
  const shipments = (since: string) => `/shipments?modifiedSince=${encodeURIComponent(since)}&limit=100`;
  const numbers = orders
    .map((o) => o.properties?.sage200Evo?.salesOrderNo)
    .filter((n) => n !== undefined && n !== null)
    .map(String);
  const buyers = (await get('/buyers?limit=100')).items as Array<{ id: string; itemListId: string | null }>;
  const items = (await get('/items?limit=100')).items as Array<{ variants: Array<{ id: string }> }>;
  // An export's header names the latest event; the body (one buyer per line) is small.
  const exported = await fetch(`${base}/api/v1/buyers/export`, { headers });
  const lastSequence = Number(exported.headers.get('supplyline-event-sequence'));
  await exported.arrayBuffer();
  return {
    headers,
    businessId: credentials.businessId,
    tenItemOrderId: ten.id,
    patchTargets: orders.slice(0, 500).map((o) => ({ id: o.id, itemId: o.orderItems[0].id })),
    ingestTargets: orders.map((o) => ({
      id: o.id,
      key: createHash('sha256').update(`${o.id}-${credentials.businessId}-order-integration`).digest('hex'),
    })),
    salesOrderNumbers: numbers.slice(0, 200),
    modifiedSince: new Date(Date.now() - 7 * 86_400_000).toISOString(),
    buyerId: buyers[0].id,
    variantIds: items.flatMap((i) => i.variants.map((v) => v.id)),
    lastSequence,
    acknowledgedOrderId: acknowledged.id,
    shipmentsSince,
    shipmentCursors: await cursorsOf(get, shipments(shipmentsSince), 200),
    allShipmentCursors: await cursorsOf(get, shipments('2000-01-01T00:00:00Z'), 50),
  };
}
