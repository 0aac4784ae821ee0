import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { writeJson } from '../lib/json.ts';
import { toDecimalString } from '../lib/money.ts';
import { findDefaultListId } from '../pricing/repository.ts';
import type { VariantRow } from './mapper.ts';
import type { CreateVariantInput, UpdateVariantInput } from './schema.ts';
import { whereLive } from '../db/live.ts';
import { insertRows, insertRowsReturning } from '../db/bulk.ts';

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

/** The variants table's columns, in the order the multi-row inserts (here and the demo's) send them. */
export const VARIANT_COLUMNS = [
  'id',
  'business_id',
  'item_id',
  'variant_name',
  'sku',
  'barcode',
  'currency',
  'price',
  'cost',
  'weight',
  'unit_of_measure',
  'sequence',
  'properties',
  'created_at',
  'updated_at',
] as const;

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
  const listId = await findDefaultListId(db, businessId);
  return (await insertVariantsOf(db, businessId, listId, [{ itemId, variants, firstSequence }], now)).ids[0];
}

/**
 * `insertVariants` for several items at once, one statement per table, with entries on the list
 * `listId`: each item's variant ids, and the variants as stored, read later (`insertRowsReturning`).
 */
export async function insertVariantsOf(
  db: Db,
  businessId: string,
  listId: string,
  items: { itemId: string; variants: CreateVariantInput[]; firstSequence: number }[],
  now: string,
): Promise<{ ids: string[][]; stored(): Promise<VariantRow[]> }> {
  const ids = items.map(({ variants }) => variants.map(() => newId('var')));
  const rows = items.flatMap(({ itemId, variants, firstSequence }, i) =>
    variants.map((v, j) => {
      const values = { sequence: firstSequence + j, ...variantValues(v) };
      return [
        ids[i][j],
        businessId,
        itemId,
        v.variantName ?? 'Default',
        values.sku ?? null,
        values.barcode ?? null,
        v.currency,
        toDecimalString(v.price),
        values.cost ?? null,
        values.weight ?? null,
        values.unit_of_measure ?? null,
        values.sequence,
        writeJson(v.properties),
        now,
        now,
      ];
    }),
  );
  const inserted = await insertRowsReturning<VariantRow>(db, 'item_variants', VARIANT_COLUMNS, rows);
  await insertRows(
    db,
    'item_list_entries',
    ['id', 'business_id', 'item_list_id', 'item_variant_id', 'created_at', 'updated_at'],
    rows.map((r) => [newId('ile'), businessId, listId, r[0], now, now]),
    {},
    { ahead: true },
  );
  return { ids, stored: inserted.rows };
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
