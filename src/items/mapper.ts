import type { Selectable } from 'kysely';
import type { ItemTable, ItemVariantTable } from './table.ts';
import { readJson } from '../lib/json.ts';
import { toNumber } from '../lib/money.ts';
import { toIso } from '../lib/time.ts';
import type { Item, Variant } from './schema.ts';

export type ItemRow = Selectable<ItemTable>;
export type VariantRow = Selectable<ItemVariantTable>;

export function toVariant(row: VariantRow): Variant {
  return {
    id: row.id,
    itemId: row.item_id,
    variantName: row.variant_name,
    sku: row.sku,
    barcode: row.barcode,
    currency: row.currency,
    price: toNumber(row.price)!,
    weight: toNumber(row.weight),
    unitOfMeasure: row.unit_of_measure,
    sequence: row.sequence,
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    // Last, as GET's serializer writes it (optional: src/businesses/margin.ts), so exports and events read the same.
    cost: toNumber(row.cost),
  };
}

export function toItem(row: ItemRow, variants: VariantRow[]): Item {
  return {
    id: row.id,
    name: row.name,
    handle: row.handle,
    description: row.description,
    imgUrl: row.img_url,
    customType: row.custom_type,
    brand: row.brand,
    vendorName: row.vendor_name,
    type: row.type,
    status: row.status as Item['status'],
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    variants: variants.map(toVariant),
  };
}
