import type { ShipmentRow } from '../fulfilment/shipment-repository.ts';
import type { OrderItemRow, OrderRow } from '../orders/mapper.ts';
import { idAt, type Random } from './random.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const SHIPMENT_COLUMNS = [
  'id',
  'order_id',
  'status',
  'shipped_at',
  'delivered_at',
  'expected_delivery_at',
  'carrier',
  'service',
  'tracking_numbers',
  'external_reference',
  'packages',
  'lines',
  'version',
  'created_at',
  'updated_at',
] as const;
export const SHIPMENT_CONSTANTS = { properties: null, voided_at: null };

const CARRIERS = [
  { carrier: { name: 'Australia Post', scac: 'AUPO' }, services: ['Parcel Post', 'Express Post'], weight: 5 },
  { carrier: { name: 'UPS', scac: 'UPSN' }, services: ['Ground', 'Express Saver'], weight: 2 },
  { carrier: { name: 'DHL Express', scac: 'DHLC' }, services: ['Express Worldwide'], weight: 1 },
  { carrier: { name: 'Toll', scac: null }, services: ['Road Express'], weight: 2 },
] as const;

/** A shipped order's status is its shipments' (src/fulfilment/order-status.ts follows them the other way). */
const SHIPPED = new Set(['IN_TRANSIT', 'DELIVERED', 'RETURNED']);

/** An SSCC: extension digit 0, a GS1 Australia company prefix, a serial, and the GS1 mod-10 check digit. */
function sscc(serial: number): string {
  const body = `09312345${String(serial % 1_000_000_000).padStart(9, '0')}`;
  let total = 0;
  for (let i = 0; i < 17; i++) total += Number(body[i]) * (i % 2 === 0 ? 3 : 1);
  return `${body}${(10 - (total % 10)) % 10}`;
}

const digits = (rnd: Random, n: number) => {
  let out = '';
  for (let i = 0; i < n; i++) out += String(rnd.int(0, 9));
  return out;
};

/**
 * The shipments of a shipped order (IN_TRANSIT, DELIVERED or RETURNED, not deleted), as the write
 * path would have left them: every line shipped in full, in one shipment, or in two (first lines,
 * then the rest) for half the orders of several lines; one to three cartons each with an SSCC, a
 * weight and a tracking number; the last shipped at the order's `shippedAt`; delivered or returned
 * with the order, each such change a second version. About 1.3 shipments a shipped order, so that
 * a demo of N orders holds about N shipments. `rnd` is the shipments' own generator, so that the
 * orders are the same with or without them.
 */
export function shipmentsOf(order: OrderRow, items: OrderItemRow[], rnd: Random, nowMs: number, serial: number) {
  if (!SHIPPED.has(order.status) || order.deleted_at !== null || order.shipped_at === null) return [];
  const lastMs = new Date(order.shipped_at).getTime();
  const createdMs = new Date(order.created_at).getTime();
  const parts =
    items.length > 1 && rnd.chance(0.5) ? [items.slice(0, items.length >> 1), items.slice(items.length >> 1)] : [items];
  const rows: ShipmentRow[] = [];
  parts.forEach((part, k) => {
    const shippedMs = k === parts.length - 1 ? lastMs : Math.max(createdMs + HOUR, lastMs - DAY);
    const { carrier, services } = rnd.weighted(CARRIERS.map((c) => [c, c.weight] as const));
    const cartons = Math.min(part.length, rnd.int(1, 3));
    const packages = Array.from({ length: cartons }, (_, c) => ({
      sscc: sscc(serial * 8 + rows.length * 3 + c),
      trackingNumber: `${carrier.scac ?? 'TL'}${digits(rnd, 12)}`,
      // In the order of the response's schema, as GET and the write path's events show it.
      weight: { value: rnd.int(5, 250) / 10, unit: 'kg' },
      dimensions: null,
      lines: part.filter((_, i) => i % cartons === c).map((i) => ({ orderItemId: i.id, quantity: Number(i.quantity) })),
    }));
    const changedMs =
      order.status === 'IN_TRANSIT'
        ? null
        : Math.min(nowMs, Math.max(shippedMs + 12 * HOUR, new Date(order.expected_delivery_at ?? shippedMs).getTime()));
    const shippedAt = new Date(shippedMs).toISOString();
    rows.push({
      id: idAt('shp', shippedMs),
      business_id: order.business_id,
      order_id: order.id,
      status: order.status,
      shipped_at: shippedAt,
      delivered_at: order.status === 'DELIVERED' ? new Date(changedMs!).toISOString() : null,
      expected_delivery_at: order.expected_delivery_at,
      carrier: JSON.stringify(carrier),
      service: rnd.pick(services),
      tracking_numbers: JSON.stringify(packages.map((p) => p.trackingNumber)),
      external_reference: `ASN-${order.internal_reference.slice(3)}-${k + 1}`,
      properties: null,
      packages: JSON.stringify(packages),
      lines: JSON.stringify(part.map((i) => ({ orderItemId: i.id, quantity: Number(i.quantity) }))),
      version: changedMs === null ? 1 : 2,
      created_at: shippedAt,
      updated_at: changedMs === null ? shippedAt : new Date(changedMs).toISOString(),
      voided_at: null,
    });
  });
  return rows;
}
