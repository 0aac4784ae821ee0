import type { Db } from '../db/types.ts';
import { writeJson } from '../lib/json.ts';
import { insertRows } from '../db/bulk.ts';
import { CURRENCY, type Buyer } from './catalogue.ts';
import { idAt, unitsToDecimal, type Random } from './random.ts';

const DAY = 86_400_000;
const ORDER_COLUMNS = [
  'id', 'partnership_id', 'phase', 'status', 'internal_reference', 'external_reference', 'notes', 'delivery_address',
  'expected_delivery_at', 'delivered_at', 'shipped_at', 'total_amount', 'properties', 'ingested_at', 'created_at', 'updated_at', 'deleted_at',
];
const ITEM_COLUMNS = ['id', 'order_id', 'item_list_entry_id', 'line_number', 'quantity', 'unit_of_measure', 'price', 'cost', 'created_at', 'updated_at'];

type Phase = 'DRAFT' | 'PENDING' | 'ACTIVE' | 'ARCHIVED' | 'REJECTED' | 'CANCELLED';
const RECENT: Array<[Phase, number]> = [['PENDING', 30], ['ACTIVE', 40], ['DRAFT', 10], ['ARCHIVED', 10], ['CANCELLED', 5], ['REJECTED', 5]];
const OLD: Array<[Phase, number]> = [['ARCHIVED', 80], ['CANCELLED', 8], ['REJECTED', 4], ['ACTIVE', 5], ['PENDING', 2], ['DRAFT', 1]];
const STATUS: Record<Phase, Array<[string, number]>> = {
  DRAFT: [['UNASSIGNED', 1]],
  PENDING: [['UNASSIGNED', 8], ['ACCEPTED', 2]],
  ACTIVE: [['ACCEPTED', 4], ['PACKED', 3], ['IN_TRANSIT', 3], ['DELIVERED', 1]],
  ARCHIVED: [['DELIVERED', 90], ['RETURNED', 5], ['NOT_APPLICABLE', 5]],
  REJECTED: [['NOT_APPLICABLE', 1]],
  CANCELLED: [['NOT_APPLICABLE', 3], ['RETURNED', 1]],
};

/** The shapes integrations leave on orders: ERP numbers, GUIDs, nested objects and explicit nulls. */
function propertiesOf(rnd: Random, sequence: number, createdMs: number): Record<string, unknown> | null {
  if (rnd.chance(0.5)) return null;
  const salesOrderNo = rnd.chance(0.1) ? String(100_000 + sequence) : 100_000 + sequence;
  const guid = () => {
    const hex = () => Math.floor(rnd.next() * 0x1_0000_0000).toString(16).padStart(8, '0');
    const h = hex() + hex() + hex() + hex();
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  switch (rnd.int(0, 4)) {
    case 0: return { sage200Evo: { salesOrderNo } };
    case 1: return {
      sage200Evo: { salesOrderNo, syncedAt: new Date(createdMs + 600_000).toISOString() },
      warehouse: { pickList: `PL-${sequence}`, bay: null },
    };
    case 2: return { unleashed: { guid: guid() } };
    case 3: return { unleashed: { guid: guid(), status: 'Completed' }, sage200Evo: { salesOrderNo: null } };
    default: return { channel: 'shopify', shopify: { order: { id: `gid://shopify/Order/${5_000_000 + sequence}`, tags: ['wholesale'] } } };
  }
}

export interface OrderBatch {
  /** The SO number of the batch's first order, counting from 1. */
  firstSequence: number;
  count: number;
  /** createdAt of order n is start + n * step (plus jitter), so numbers and times rise together. */
  startMs: number;
  stepMs: number;
  nowMs: number;
}

/** Inserts one batch of orders and their items; returns the number of order items. */
export async function insertOrders(db: Db, businessId: string, buyers: Buyer[], batch: OrderBatch, rnd: Random): Promise<number> {
  const orders: unknown[][] = [];
  const items: unknown[][] = [];
  const picks: number[] = [];
  for (let n = 0; n < batch.count; n++) {
    const sequence = batch.firstSequence + n;
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

    // Distinct entries: a partial Fisher-Yates shuffle of the menu's indexes. Small orders are common.
    const count = Math.min(menu.length, 1 + Math.floor(19 * rnd.next() ** 3));
    while (picks.length < menu.length) picks.push(picks.length);
    let totalUnits = 0;
    for (let line = 0; line < count; line++) {
      const j = line + Math.floor(rnd.next() * (menu.length - line));
      const index = picks[j];
      picks[j] = picks[line];
      picks[line] = index;
      const entry = menu[index];
      const quantity = rnd.weighted([[rnd.int(1, 5), 6], [rnd.int(6, 24), 3], [rnd.int(25, 200), 1]] as const);
      totalUnits += quantity * entry.priceUnits;
      items.push([idAt('oi', createdMs), orderId, entry.entryId, line + 1, String(quantity), entry.unitOfMeasure,
        unitsToDecimal(entry.priceUnits), unitsToDecimal(entry.costUnits), created, created]);
    }
    const expectedMs = createdMs + rnd.int(2, 14) * DAY;
    const shipped = status === 'IN_TRANSIT' || status === 'DELIVERED' || status === 'RETURNED';
    orders.push([
      orderId, buyer.partnershipId, deleted ? 'DELETED' : phase, status, `SO-${String(sequence).padStart(6, '0')}`,
      rnd.chance(0.6) ? `PO-${rnd.int(10_000, 99_999)}` : null, rnd.chance(0.1) ? 'Leave at the loading dock' : null,
      rnd.chance(0.8) ? buyer.address : null, new Date(expectedMs).toISOString(),
      status === 'DELIVERED' ? new Date(expectedMs).toISOString() : null,
      shipped ? new Date(createdMs + rnd.int(1, 3) * DAY).toISOString() : null,
      // Drawn here, in the middle of the row, to keep the seed's sequence of random numbers.
      unitsToDecimal(totalUnits), writeJson(propertiesOf(rnd, sequence, createdMs)),
      rnd.chance(0.3) ? new Date(createdMs + 5_000).toISOString() : null, created, updated, deleted ? updated : null,
    ]);
  }
  await insertRows(db, 'orders', ORDER_COLUMNS, orders,
    { business_id: businessId, membership_id: null, integration_id: null, shipped_by: null, currency: CURRENCY, version: 1 });
  await insertRows(db, 'order_items', ITEM_COLUMNS, items, { business_id: businessId, currency: CURRENCY, properties: null });
  return items.length;
}
