import type { Selectable } from 'kysely';
import type { OrderItemTable, OrderTable } from './table.ts';
import { readJson } from '../lib/json.ts';
import { formatAmount, toNumber } from '../lib/money.ts';
import { toIso } from '../lib/time.ts';
import type { AcknowledgementSummary, Order, OrderItem } from './schema.ts';

export type OrderRow = Selectable<OrderTable>;
/** What a list page reads of each order first: enough to find its rendering, and to drop one deleted since. */
export type OrderStub = Pick<OrderRow, 'id' | 'version' | 'business_id' | 'deleted_at' | 'created_at'>;

/** An order item row: it records the variant it sold (migration 0030), so it is all an order's line shows. */
export type OrderItemRow = Selectable<OrderItemTable>;

/** What an order line records of the variant it sold. */
export type VariantFields = Pick<OrderItemRow, 'item_variant_id' | 'item_id' | 'variant_name' | 'sku'>;

/** Only the variant fields of a row that carries more (an entry row, say), for an order line to record. */
export const variantOf = ({ item_variant_id, item_id, variant_name, sku }: VariantFields): VariantFields => ({
  item_variant_id,
  item_id,
  variant_name,
  sku,
});

export function toOrderItem(row: OrderItemRow): OrderItem {
  return {
    id: row.id,
    orderId: row.order_id,
    lineNumber: row.line_number,
    itemListEntryId: row.item_list_entry_id,
    itemListEntry: {
      id: row.item_list_entry_id,
      itemVariantId: row.item_variant_id,
      itemVariant: { id: row.item_variant_id, itemId: row.item_id, variantName: row.variant_name, sku: row.sku },
    },
    quantity: toNumber(row.quantity)!,
    unitOfMeasure: row.unit_of_measure,
    currency: row.currency,
    price: formatAmount(row.price),
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    // Last, as GET's serializer writes it (optional: src/businesses/margin.ts), so exports and events read the same.
    cost: formatAmount(row.cost),
  };
}

export function toOrder(row: OrderRow, items: OrderItemRow[]): Order {
  return {
    id: row.id,
    partnershipId: row.partnership_id,
    membershipId: row.membership_id,
    integrationId: row.integration_id,
    phase: row.phase as Order['phase'],
    status: row.status as Order['status'],
    internalReference: row.internal_reference,
    externalReference: row.external_reference,
    notes: row.notes,
    deliveryAddress: row.delivery_address,
    expectedDeliveryAt: toIso(row.expected_delivery_at),
    deliveredAt: toIso(row.delivered_at),
    shippedAt: toIso(row.shipped_at),
    shippedBy: toIso(row.shipped_by),
    currency: row.currency,
    totalAmount: formatAmount(row.total_amount),
    properties: readJson(row.properties),
    version: Number(row.version),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    acknowledgement:
      row.acknowledgement_id == null
        ? null
        : {
            id: row.acknowledgement_id,
            decidedAt: toIso(row.acknowledged_at!),
            summary: row.acknowledgement_summary as AcknowledgementSummary,
          },
    orderItems: items.map(toOrderItem),
  };
}
