import { sql, type Selectable } from 'kysely';
import { isUniqueViolation } from '../db/dialect.ts';
import { offsetOf, propertyCondition, type Page, type PropertyFilter } from '../db/list.ts';
import type { Db, ItemTable, ItemVariantTable } from '../db/types.ts';
import { conflict } from '../http/errors.ts';
import { mergeStoredProperties } from '../http/properties.ts';
import { newId } from '../lib/ids.ts';
import { readJson, writeJson, type JsonObject } from '../lib/json.ts';
import { toDecimalString, toNumber } from '../lib/money.ts';
import { toIso } from '../lib/time.ts';
import { findDefaultListId } from '../pricing/repository.ts';
import type { CreateItemInput, CreateVariantInput, Item, UpdateVariantInput, Variant } from './schema.ts';

type ItemRow = Selectable<ItemTable>;
type VariantRow = Selectable<ItemVariantTable>;

export function toVariant(row: VariantRow): Variant {
  return {
    id: row.id,
    itemId: row.item_id,
    variantName: row.variant_name,
    sku: row.sku,
    barcode: row.barcode,
    currency: row.currency,
    price: toNumber(row.price)!,
    cost: toNumber(row.cost),
    weight: toNumber(row.weight),
    unitOfMeasure: row.unit_of_measure,
    sequence: row.sequence,
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
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
    status: row.status,
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    variants: variants.map(toVariant),
  };
}

/** A handle made from a name: lower case, words joined by hyphens. */
export function handleFromName(name: string): string {
  const slug = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 200);
  return slug || 'item';
}

async function isHandleTaken(db: Db, businessId: string, handle: string): Promise<boolean> {
  const row = await db.selectFrom('items').select('id')
    .where('business_id', '=', businessId).where('handle', '=', handle).where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** A derived handle never conflicts: "blue-widget", then "blue-widget-2", and so on. */
async function freeHandle(db: Db, businessId: string, base: string): Promise<string> {
  const taken = new Set((await db.selectFrom('items').select('handle')
    .where('business_id', '=', businessId).where('deleted_at', 'is', null)
    .where((eb) => eb.or([eb('handle', '=', base), eb('handle', 'like', `${base}-%`)]))
    .execute()).map((r) => r.handle));
  let handle = base;
  for (let n = 2; taken.has(handle); n++) handle = `${base}-${n}`;
  return handle;
}

function variantValues(input: UpdateVariantInput | CreateVariantInput) {
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
export async function insertVariants(db: Db, businessId: string, itemId: string, variants: CreateVariantInput[], firstSequence: number, now: string): Promise<string[]> {
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
  await db.insertInto('item_list_entries').values(rows.map((r) => ({
    id: newId('ile'), business_id: businessId, item_list_id: listId, item_variant_id: r.id, created_at: now, updated_at: now,
  }))).execute();
  return rows.map((r) => r.id);
}

/** Item, then its platform (ownership) record with the same id, then the variants. */
export async function createItem(db: Db, businessId: string, input: CreateItemInput, now: string) {
  const { item } = input;
  const handle = item.handle ?? await freeHandle(db, businessId, handleFromName(item.name));
  if (item.handle !== undefined && await isHandleTaken(db, businessId, handle)) throw handleConflict(handle);
  const id = newId('itm');
  try {
    await db.insertInto('items').values({
      id,
      business_id: businessId,
      name: item.name,
      handle,
      description: item.description ?? null,
      img_url: item.imgUrl ?? null,
      custom_type: item.customType ?? null,
      brand: item.brand ?? null,
      vendor_name: item.vendorName ?? null,
      type: item.type ?? 'OTHER',
      status: item.status ?? 'ACTIVE',
      properties: writeJson(item.properties),
      created_at: now,
      updated_at: now,
    }).execute();
  } catch (error) {
    // Two creates racing for one handle: the database's unique index decides.
    if (isUniqueViolation(error)) throw handleConflict(handle);
    throw error;
  }
  await db.insertInto('platform_items').values({ id, business_id: businessId, created_at: now }).execute();
  const variantIds = await insertVariants(db, businessId, id, input.variants, 1, now);
  return { id, variantIds };
}

const handleConflict = (handle: string) => conflict(`An item with handle '${handle}' already exists`);

export async function findItemRow(db: Db, businessId: string, id: string): Promise<ItemRow | undefined> {
  return db.selectFrom('items').selectAll()
    .where('business_id', '=', businessId).where('id', '=', id).where('deleted_at', 'is', null)
    .executeTakeFirst();
}

async function liveVariantsOf(db: Db, businessId: string, itemIds: string[]): Promise<VariantRow[]> {
  if (itemIds.length === 0) return [];
  return db.selectFrom('item_variants').selectAll()
    .where('business_id', '=', businessId).where('item_id', 'in', itemIds).where('deleted_at', 'is', null)
    .orderBy('sequence').orderBy('id').execute();
}

/** A live item of this business with its live variants, or undefined (missing, deleted or foreign). */
export async function findItem(db: Db, businessId: string, id: string): Promise<Item | undefined> {
  const row = await findItemRow(db, businessId, id);
  return row && toItem(row, await liveVariantsOf(db, businessId, [id]));
}

export interface ListItemsOptions {
  page: number;
  limit: number;
  includeDeleted: boolean;
  updatedSince?: string;
  status?: string;
  property: PropertyFilter | null;
}

export async function listItems(db: Db, businessId: string, options: ListItemsOptions): Promise<Page<Item>> {
  let query = db.selectFrom('items').where('business_id', '=', businessId);
  if (!options.includeDeleted) query = query.where('deleted_at', 'is', null);
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  if (options.status) query = query.where('status', '=', options.status);
  if (options.property) query = query.where(propertyCondition(db, sql.ref('properties'), options.property));

  const { total } = await query.select((eb) => eb.fn.countAll().as('total')).executeTakeFirstOrThrow();
  const rows = await query.selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(options.limit).offset(offsetOf(options.page, options.limit))
    .execute();
  // One query for all variants of the page, never one per item.
  const variants = await db.selectFrom('item_variants').selectAll()
    .where('business_id', '=', businessId).where('item_id', 'in', rows.length ? rows.map((r) => r.id) : [''])
    .$if(!options.includeDeleted, (q) => q.where('deleted_at', 'is', null))
    .orderBy('sequence').orderBy('id').execute();
  const byItem = new Map<string, VariantRow[]>();
  for (const v of variants) byItem.set(v.item_id, [...(byItem.get(v.item_id) ?? []), v]);
  return {
    items: rows.map((r) => toItem(r, byItem.get(r.id) ?? [])),
    total: Number(total),
    page: options.page,
    pageSize: options.limit,
  };
}

export interface ItemChanges {
  fields: Partial<Pick<ItemRow, 'name' | 'description' | 'img_url' | 'custom_type' | 'brand' | 'vendor_name' | 'status'>>;
  properties?: JsonObject;
  createVariants: CreateVariantInput[];
  updateVariants: UpdateVariantInput[];
  deleteVariants: string[];
}

/** Ids among `ids` that are not live variants of the item. */
export async function findMissingVariants(db: Db, businessId: string, itemId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = new Set((await db.selectFrom('item_variants').select('id')
    .where('business_id', '=', businessId).where('item_id', '=', itemId)
    .where('id', 'in', ids).where('deleted_at', 'is', null).execute()).map((r) => r.id));
  return [...new Set(ids)].filter((id) => !found.has(id));
}

export async function countLiveVariants(db: Db, businessId: string, itemId: string): Promise<number> {
  const row = await db.selectFrom('item_variants').select((eb) => eb.fn.countAll().as('n'))
    .where('business_id', '=', businessId).where('item_id', '=', itemId).where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Applies an item PATCH; the caller has checked the item and the variant ids and runs this in a transaction. */
export async function updateItem(db: Db, businessId: string, item: ItemRow, changes: ItemChanges, now: string): Promise<void> {
  const properties = changes.properties === undefined
    ? {}
    : { properties: mergeStoredProperties(item.properties, changes.properties, 'properties') };
  await db.updateTable('items').set({ ...changes.fields, ...properties, updated_at: now })
    .where('business_id', '=', businessId).where('id', '=', item.id).execute();

  for (const variant of changes.updateVariants) {
    const values: Record<string, unknown> = variantValues(variant);
    if (variant.properties !== undefined) {
      const current = await db.selectFrom('item_variants').select('properties').where('id', '=', variant.id).executeTakeFirstOrThrow();
      values.properties = mergeStoredProperties(current.properties, variant.properties, 'updateVariants.properties');
    }
    await db.updateTable('item_variants').set({ ...values, updated_at: now })
      .where('business_id', '=', businessId).where('id', '=', variant.id).execute();
  }
  if (changes.deleteVariants.length > 0) {
    await db.updateTable('item_variants').set({ deleted_at: now, updated_at: now })
      .where('business_id', '=', businessId).where('id', 'in', changes.deleteVariants).execute();
  }
  const last = await db.selectFrom('item_variants').select((eb) => eb.fn.max('sequence').as('max'))
    .where('item_id', '=', item.id).executeTakeFirst();
  await insertVariants(db, businessId, item.id, changes.createVariants, Number(last?.max ?? 0) + 1, now);
}

/** Soft delete: the item and its variants keep their rows and get `deletedAt`. False when not found. */
export async function deleteItem(db: Db, businessId: string, id: string, now: string): Promise<boolean> {
  const result = await db.updateTable('items').set({ deleted_at: now, updated_at: now, status: 'DELETED' })
    .where('business_id', '=', businessId).where('id', '=', id).where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db.updateTable('item_variants').set({ deleted_at: now, updated_at: now })
    .where('business_id', '=', businessId).where('item_id', '=', id).where('deleted_at', 'is', null).execute();
  return true;
}
