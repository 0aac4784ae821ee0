import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { toDecimalString } from '../lib/money.ts';
import { findDefaultListId } from '../pricing/repository.ts';
import type { VariantRow } from './mapper.ts';
import type { CreateVariantInput, UpdateVariantInput } from './schema.ts';
import { whereLive } from '../db/live.ts';

export function variantValues(input: UpdateVariantInput | CreateVariantInput) {
  return {
    ...(input.variantName !== undefined && { variant_name: input.variantName }),
    ...(input.sku !== undefined && { sku: input.sku }),
    ...(input.barcode !== undefined && { barcode: input.barcode }),
    ...(input.currency !== undefined && { currency: input.currency }),
    ...(input.price !== undefined && { price: toDecimalString(input.price) }),
    ...(input.cost !== undefined && { cost: input.cost === null ? null : toDecimalString(input.cost) }),
    ...(input.weight !== undefined && { weight: input.weight === null ? null : toDecimalString(input.weight) }),
    ...(input.unitOfMeasure !== undefined && { unit_of_measure: input.unitOfMeasure }),
    ...(input.sequence !== undefined && { sequence: input.sequence }),
  };
}

/** Inserts variants and gives each one an entry, without price override, on the default item list. */
export async function insertVariants(
  db: Db,
  businessId: string,
  itemId: string,
  variants: CreateVariantInput[],
  firstSequence: number,
  now: string,
): Promise<string[]> {
  if (variants.length === 0) return [];
  const rows = variants.map((v, i) => ({
    id: newId('var'),
    business_id: businessId,
    item_id: itemId,
    variant_name: v.variantName ?? 'Default',
    currency: v.currency,
    price: toDecimalString(v.price),
    sequence: firstSequence + i,
    ...variantValues(v),
    properties: writeJson(v.properties),
    created_at: now,
    updated_at: now,
  }));
  await db.insertInto('item_variants').values(rows).execute();
  const listId = await findDefaultListId(db, businessId);
  await db
    .insertInto('item_list_entries')
    .values(
      rows.map((r) => ({
        id: newId('ile'),
        business_id: businessId,
        item_list_id: listId,
        item_variant_id: r.id,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  return rows.map((r) => r.id);
}

export async function liveVariantsOf(db: Db, businessId: string, itemIds: string[]): Promise<VariantRow[]> {
  if (itemIds.length === 0) return [];
  return db
    .selectFrom('item_variants')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('item_id', 'in', itemIds)
    .where(whereLive())
    .orderBy('sequence')
    .orderBy('id')
    .execute();
}

/** Ids among `ids` that are not live variants of the item. */
export async function findMissingVariants(
  db: Db,
  businessId: string,
  itemId: string,
  ids: string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = new Set(
    (
      await db
        .selectFrom('item_variants')
        .select('id')
        .where('business_id', '=', businessId)
        .where('item_id', '=', itemId)
        .where('id', 'in', ids)
        .where(whereLive())
        .execute()
    ).map((r) => r.id),
  );
  return [...new Set(ids)].filter((id) => !found.has(id));
}

export async function countLiveVariants(db: Db, businessId: string, itemId: string): Promise<number> {
  const row = await db
    .selectFrom('item_variants')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', businessId)
    .where('item_id', '=', itemId)
    .where(whereLive())
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
