import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import type { Fixtures } from './fixtures.ts';

type Request = autocannon.Request;

export interface Scenario {
  name: string;
  kind: 'read' | 'list' | 'write';
  /** Requests autocannon cycles through; setupRequest makes writes unique per request. */
  requests: Request[];
}

const rotate = <T>(list: T[]) => {
  let i = 0;
  return () => list[i++ % list.length];
};

/** Each scenario of the performance issue, as autocannon requests against /api/v1. */
export function buildScenarios(f: Fixtures): Scenario[] {
  const run = randomBytes(3).toString('hex');
  let n = 0;
  // A request's own headers replace autocannon's defaults, so every one carries the credentials.
  const json = { ...f.headers, 'content-type': 'application/json' };
  const get = (path: string): Request[] => [{ method: 'GET', path, headers: f.headers }];
  const salesOrderNo = rotate(f.salesOrderNumbers);
  const patchTarget = rotate(f.patchTargets);
  const ingestTarget = rotate(f.ingestTargets);
  const variants = f.variantIds;
  const shipments = (since: string) => `/api/v1/shipments?modifiedSince=${encodeURIComponent(since)}&limit=100`;
  // Pages of a walk, each a request of its own: the first page, then each cursor in turn.
  const walk = (since: string, cursors: string[]): Request[] => {
    const next = rotate(['', ...cursors.map((c) => `&cursor=${encodeURIComponent(c)}`)]);
    return [
      { method: 'GET', headers: f.headers, setupRequest: (req) => ({ ...req, path: `${shipments(since)}${next()}` }) },
    ];
  };
  return [
    { name: 'get order (10 items)', kind: 'read', requests: get(`/api/v1/orders/${f.tenItemOrderId}`) },
    {
      name: 'get order (10 items, acknowledged)',
      kind: 'read',
      requests: get(`/api/v1/orders/${f.acknowledgedOrderId}`),
    },
    {
      // A mirror following shipments: its window of 7 days, page after page by cursor.
      name: 'list shipments modifiedSince (7 days, cursor pages)',
      kind: 'list',
      requests: walk(f.shipmentsSince, f.shipmentCursors),
    },
    {
      // A new mirror's first walk: every shipment, its first 50 pages by cursor.
      name: 'list shipments modifiedSince (all, cursor pages)',
      kind: 'list',
      requests: walk('2000-01-01T00:00:00Z', f.allShipmentCursors),
    },
    { name: 'list orders (limit 20)', kind: 'list', requests: get('/api/v1/orders') },
    { name: 'list orders (limit 100)', kind: 'list', requests: get('/api/v1/orders?limit=100') },
    { name: 'list phase+status', kind: 'list', requests: get('/api/v1/orders?phase=ACTIVE&status=ACCEPTED') },
    {
      name: 'list propertyValue',
      kind: 'list',
      requests: [
        {
          method: 'GET',
          headers: f.headers,
          setupRequest: (req) => ({
            ...req,
            path: `/api/v1/orders?propertyPath=sage200Evo.salesOrderNo&propertyValue=${salesOrderNo()}`,
          }),
        },
      ],
    },
    {
      name: 'list propertyExists=false',
      kind: 'list',
      requests: get('/api/v1/orders?propertyPath=sage200Evo.salesOrderNo&propertyExists=false'),
    },
    {
      name: 'list modifiedSince (7 days)',
      kind: 'list',
      requests: get(`/api/v1/orders?modifiedSince=${encodeURIComponent(f.modifiedSince)}`),
    },
    {
      // A follower catching up: pages of 100 from places spread over the whole log.
      name: 'feed page (100 events)',
      kind: 'list',
      requests: [
        {
          method: 'GET',
          headers: f.headers,
          setupRequest: (req) => ({
            ...req,
            path: `/api/v1/events?after=${Math.floor(Math.random() * Math.max(1, f.lastSequence - 100))}&limit=100`,
          }),
        },
      ],
    },
    {
      name: 'patch order',
      kind: 'write',
      requests: [
        {
          method: 'PATCH',
          headers: json,
          setupRequest: (req) => {
            const target = patchTarget();
            const i = ++n;
            return {
              ...req,
              path: `/api/v1/orders/${target.id}`,
              body: JSON.stringify({
                order: { properties: { bench: { run, n: i } } },
                updateOrderItems: [{ id: target.itemId, quantity: (i % 50) + 1 }],
              }),
            };
          },
        },
      ],
    },
    {
      name: 'create order (5 items)',
      kind: 'write',
      requests: [
        {
          method: 'POST',
          path: `/api/v1/buyers/${f.buyerId}/orders`,
          headers: json,
          setupRequest: (req) => {
            const i = ++n;
            const items = Array.from({ length: 5 }, (_, k) => ({
              itemVariantId: variants[(i * 5 + k) % variants.length],
              quantity: (i % 9) + 1,
            }));
            // Five consecutive variants are distinct as long as the catalogue has at least five.
            return {
              ...req,
              body: JSON.stringify({
                expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
                externalReference: `BENCH-${run}-${i}`,
                orderItems: items,
              }),
            };
          },
        },
      ],
    },
    {
      name: 'ingestion',
      kind: 'write',
      requests: [
        {
          method: 'POST',
          path: '/api/v1/orders',
          setupRequest: (req) => {
            const target = ingestTarget();
            return {
              ...req,
              headers: { ...json, 'idempotency-key': target.key },
              body: JSON.stringify({ orderId: target.id, businessId: f.businessId }),
            };
          },
        },
      ],
    },
    {
      name: 'create item',
      kind: 'write',
      requests: [
        {
          method: 'POST',
          path: '/api/v1/items',
          headers: json,
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({
              item: { name: `Bench ${run} ${++n}` },
              variants: [{ variantName: 'Default', currency: 'AUD', price: 12.5, cost: 4 }],
            }),
          }),
        },
      ],
    },
  ];
}
