import type { Selectable } from 'kysely';
import { toNumber } from '../lib/money.ts';
import { toIso } from '../lib/time.ts';
import type { PriceList } from './schema.ts';
import type { ItemListTable } from './table.ts';

export type ItemListRow = Selectable<ItemListTable>;
export interface EntryRow {
  id: string;
  item_list_id: string;
  item_variant_id: string;
  item_id: string;
  override_flat_price: string | null;
  currency: string | null;
}

export function toPriceList(row: ItemListRow, entries: EntryRow[], partnershipIds: string[]): PriceList {
  return {
    id: row.id,
    label: row.label,
    status: row.status as PriceList['status'],
    isDefault: Boolean(row.is_default),
    globalPriceFactor: toNumber(row.global_price_factor)!,
    startDate: toIso(row.start_date),
    endDate: toIso(row.end_date),
    entries: entries.map((e) => ({
      id: e.id,
      itemVariantId: e.item_variant_id,
      itemId: e.item_id,
      overrideFlatPrice: toNumber(e.override_flat_price),
      currency: e.currency,
    })),
    partnershipIds,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    // Last, as GET's serializer writes it (optional: src/businesses/margin.ts), so exports and events read the same.
    globalCostFactor: toNumber(row.global_cost_factor)!,
  };
}
