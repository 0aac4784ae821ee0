import type { Db } from '../db/types.ts';
import { writeJson } from '../lib/json.ts';
import { insertRows } from '../db/bulk.ts';
import { toOrder, type OrderItemRow, type OrderRow } from '../orders/mapper.ts';
import { CURRENCY, type Buyer } from './catalogue.ts';
import type { DemoEventBatch } from './events.ts';
import type { ProjectionBatch } from '../orders/read-model/index.ts';
import { createRandom, idAt, unitsToDecimal, type Random } from './random.ts';
import { SHIPMENT_COLUMNS, SHIPMENT_CONSTANTS, shipmentsOf } from './shipments.ts';
import { toShipment } from '../fulfilment/shipment-repository.ts';

const DAY = 86_400_000;
const ORDER_COLUMNS = [
  'id',
  'partnership_id',
  'phase',
  'status',
  'internal_reference',
  'external_reference',
  'notes',
  'delivery_address',
  'expected_delivery_at',
  'delivered_at',
  'shipped_at',
  'total_amount',
  'properties',
  'ingested_at',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;
const ITEM_COLUMNS = [
  'id',
  'order_id',
  'item_list_entry_id',
  'item_variant_id',
  'item_id',
  'variant_name',
  'sku',
  'line_number',
  'quantity',
  'unit_of_measure',
  'price',
  'cost',
  'created_at',
  'updated_at',
  'shipped_quantity',
] as const;
/** Written once per statement, as constants. */
const ORDER_CONSTANTS = {
  membership_id: null,
  integration_id: null,
  shipped_by: null,
  acknowledgement_id: null,
  acknowledged_at: null,
  acknowledgement_summary: null,
  currency: CURRENCY,
  version: 1,
};
const ITEM_CONSTANTS = { currency: CURRENCY, properties: null };

type Phase = 'DRAFT' | 'PENDING' | 'ACTIVE' | 'ARCHIVED' | 'REJECTED' | 'CANCELLED';
const RECENT: Array<[Phase, number]> = [
  ['PENDING', 30],
  ['ACTIVE', 40],
  ['DRAFT', 10],
  ['ARCHIVED', 10],
  ['CANCELLED', 5],
  ['REJECTED', 5],
];
const OLD: Array<[Phase, number]> = [
  ['ARCHIVED', 80],
  ['CANCELLED', 8],
  ['REJECTED', 4],
  ['ACTIVE', 5],
  ['PENDING', 2],
  ['DRAFT', 1],
];
const STATUS: Record<Phase, Array<[string, number]>> = {
  DRAFT: [['UNASSIGNED', 1]],
  PENDING: [
    ['UNASSIGNED', 8],
    ['ACCEPTED', 2],
  ],
  ACTIVE: [
    ['ACCEPTED', 4],
    ['PACKED', 3],
    ['IN_TRANSIT', 3],
    ['DELIVERED', 1],
  ],
  ARCHIVED: [
    ['DELIVERED', 90],
    ['RETURNED', 5],
    ['NOT_APPLICABLE', 5],
  ],
  REJECTED: [['NOT_APPLICABLE', 1]],
  CANCELLED: [
    ['NOT_APPLICABLE', 3],
    ['RETURNED', 1],
  ],
};

/** Keys ordered as PostgreSQL's jsonb keeps them (shorter first, then bytes), so both backends read back the same. */
export function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, inJsonbOrder((value as Record<string, unknown>)[k])]));
}

function propertiesOf(rnd: Random, sequence: number, createdMs: number): Record<string, unknown> | null {
  if (rnd.chance(0.5)) return null;
  const salesOrderNo = rnd.chance(0.1) ? String(100_000 + sequence) : 100_000 + sequence;
  const guid = () => {
    const hex = () =>
      Math.floor(rnd.next() * 0x1_0000_0000)
        .toString(16)
        .padStart(8, '0');
    const h = hex() + hex() + hex() + hex();
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  switch (rnd.int(0, 4)) {
    case 0:
      return { sage200Evo: { salesOrderNo } };
    case 1:
      return {
        sage200Evo: { salesOrderNo, syncedAt: new Date(createdMs + 600_000).toISOString() },
        warehouse: { pickList: `PL-${sequence}`, bay: null },
      };
    case 2:
      return { unleashed: { guid: guid() } };
    case 3:
      return { unleashed: { guid: guid(), status: 'Completed' }, sage200Evo: { salesOrderNo: null } };
    default:
      return {
        channel: 'shopify',
        shopify: { order: { id: `gid://shopify/Order/${5_000_000 + sequence}`, tags: ['wholesale'] } },
      };
  }
}

export interface OrderBatch {
  /** The batch's first SO number, from 1. */
  firstSequence: number;
  count: number;
  /** Order n's createdAt is start + n * step (plus jitter), so numbers and times rise together. */
  startMs: number;
  stepMs: number;
  nowMs: number;
}

export interface MadeOrders {
  orders: unknown[][];
  items: unknown[][];
  shipments: unknown[][];
  projections: ProjectionBatch;
  events: DemoEventBatch;
}

/** Makes a batch of orders with items, property rows and events (mapped as GET maps them), and starts deflating. */
export function makeOrders(
  businessId: string,
  buyers: Buyer[],
  batch: OrderBatch,
  rnd: Random,
  projections: ProjectionBatch,
  events: DemoEventBatch,
): MadeOrders {
  const orders: unknown[][] = [];
  const items: unknown[][] = [];
  const shipments: unknown[][] = [];
  const picks: number[] = [];
  // The shipments draw from their own sequence, so the orders are those of the seed either way.
  const shipping = createRandom(batch.firstSequence * 2_654_435_761);
  for (let n = 0; n < batch.count; n++) {
    const sequence = batch.firstSequence + n;
    const { order, orderItems } = generateOrder(businessId, buyers, batch, sequence, rnd, picks);
    orders.push(ORDER_COLUMNS.map((c) => order[c]));
    const shipped = shipmentsOf(order, orderItems, shipping, batch.nowMs, sequence);
    // Shipments ship every line in full.
    for (const item of orderItems) {
      if (shipped.length > 0) item.shipped_quantity = item.quantity;
      items.push(ITEM_COLUMNS.map((c) => item[c]));
    }
    const shown = toOrder(order, orderItems);
    projections.add(order, shown.properties);
    events.addOrder(shown);
    for (const row of shipped) {
      shipments.push(SHIPMENT_COLUMNS.map((c) => row[c]));
      events.addShipment(toShipment(row));
    }
  }
  events.encode();
  return { orders, items, shipments, projections, events };
}

export async function insertOrders(db: Db, businessId: string, made: MadeOrders): Promise<void> {
  await insertRows(db, 'orders', ORDER_COLUMNS, made.orders, { business_id: businessId, ...ORDER_CONSTANTS });
  await insertRows(db, 'order_items', ITEM_COLUMNS, made.items, { business_id: businessId, ...ITEM_CONSTANTS });
  await insertRows(db, 'shipments', SHIPMENT_COLUMNS, made.shipments, {
    business_id: businessId,
    ...SHIPMENT_CONSTANTS,
  });
  await made.projections.insert(db);
  await made.events.insert(db);
}

/** One order and its items as their rows read back; `picks` is reused scratch space. */
function generateOrder(
  businessId: string,
  buyers: Buyer[],
  batch: OrderBatch,
  sequence: number,
  rnd: Random,
  picks: number[],
) {
  const createdMs = Math.floor(batch.startMs + (sequence - 1 + rnd.next()) * batch.stepMs);
  const created = new Date(createdMs).toISOString();
  const updatedMs = rnd.chance(0.35) ? Math.min(batch.nowMs, createdMs + rnd.int(1, 30 * DAY)) : createdMs;
  const updated = new Date(updatedMs).toISOString();
  const buyer = rnd.pick(buyers);
  const menu = buyer.menu;
  const recent = batch.nowMs - createdMs < 60 * DAY;
  const deleted = rnd.chance(0.01);
  const phase = rnd.weighted(recent ? RECENT : OLD);
  const status = rnd.weighted(STATUS[phase]);
  const orderId = idAt('ord', createdMs);

  // Distinct entries by a partial Fisher-Yates shuffle.
  const count = Math.min(menu.length, 1 + Math.floor(19 * rnd.next() ** 3));
  while (picks.length < menu.length) picks.push(picks.length);
  let totalUnits = 0;
  const orderItems: OrderItemRow[] = [];
  for (let line = 0; line < count; line++) {
    const j = line + Math.floor(rnd.next() * (menu.length - line));
    const index = picks[j];
    picks[j] = picks[line];
    picks[line] = index;
    const entry = menu[index];
    const quantity = rnd.weighted([
      [rnd.int(1, 5), 6],
      [rnd.int(6, 24), 3],
      [rnd.int(25, 200), 1],
    ] as const);
    totalUnits += quantity * entry.priceUnits;
    const { variant } = entry;
    orderItems.push({
      id: idAt('oi', createdMs),
      business_id: businessId,
      order_id: orderId,
      item_list_entry_id: entry.entryId,
      line_number: line + 1,
      quantity: String(quantity),
      unit_of_measure: entry.unitOfMeasure,
      price: unitsToDecimal(entry.priceUnits),
      cost: unitsToDecimal(entry.costUnits),
      created_at: created,
      updated_at: created,
      shipped_quantity: '0',
      ...ITEM_CONSTANTS,
      item_variant_id: variant.id,
      item_id: variant.itemId,
      variant_name: variant.variantName,
      sku: variant.sku,
    });
  }
  const expectedMs = createdMs + rnd.int(2, 14) * DAY;
  const shipped = status === 'IN_TRANSIT' || status === 'DELIVERED' || status === 'RETURNED';
  // Draw order keeps the seed's sequence of random numbers.
  const order: OrderRow = {
    id: orderId,
    business_id: businessId,
    partnership_id: buyer.partnershipId,
    phase: deleted ? 'DELETED' : phase,
    status,
    internal_reference: `SO-${String(sequence).padStart(6, '0')}`,
    external_reference: rnd.chance(0.6) ? `PO-${rnd.int(10_000, 99_999)}` : null,
    notes: rnd.chance(0.1) ? 'Leave at the loading dock' : null,
    delivery_address: rnd.chance(0.8) ? buyer.address : null,
    expected_delivery_at: new Date(expectedMs).toISOString(),
    delivered_at: status === 'DELIVERED' ? new Date(expectedMs).toISOString() : null,
    shipped_at: shipped ? new Date(createdMs + rnd.int(1, 3) * DAY).toISOString() : null,
    total_amount: unitsToDecimal(totalUnits),
    properties: writeJson(inJsonbOrder(propertiesOf(rnd, sequence, createdMs))),
    ingested_at: rnd.chance(0.3) ? new Date(createdMs + 5_000).toISOString() : null,
    created_at: created,
    updated_at: updated,
    deleted_at: deleted ? updated : null,
    ...ORDER_CONSTANTS,
  };
  return { order, orderItems };
}
