import { sql } from 'kysely';
import { isUniqueViolation, startsWith } from '../db/dialect.ts';
import { fetchPage, propertyCondition, type Page, type Paging, type PropertyFilter } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { conflict } from '../lib/errors.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson, type JsonObject } from '../lib/json.ts';
import { toItem, type ItemRow } from './mapper.ts';
import type { CreateItemInput, CreateVariantInput, Item, UpdateVariantInput } from './schema.ts';
import { insertVariants, liveVariantsOf, variantValues } from './variant-repository.ts';
import { groupBy } from '../lib/group.ts';
import { whereLive } from '../db/live.ts';

/** Lower case, words joined by hyphens. */
export function handleFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200);
  return slug || 'item';
}

/** Handles are unique among live items. */
export async function findItemIdByHandle(db: Db, businessId: string, handle: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('items')
    .select('id')
    .where('business_id', '=', businessId)
    .where('handle', '=', handle)
    .where(whereLive())
    .executeTakeFirst();
  return row?.id;
}

async function isHandleTaken(db: Db, businessId: string, handle: string): Promise<boolean> {
  return (await findItemIdByHandle(db, businessId, handle)) !== undefined;
}

/** "blue-widget", then "blue-widget-2", and so on. */
async function freeHandle(db: Db, businessId: string, base: string): Promise<string> {
  const taken = new Set(
    (
      await db
        .selectFrom('items')
        .select('handle')
        .where('business_id', '=', businessId)
        .where(whereLive())
        // One index range for every handle with the base as prefix; only base and base-N matter below.
        .where(startsWith(db, 'handle', base))
        .execute()
    ).map((r) => r.handle),
  );
  let handle = base;
  for (let n = 2; taken.has(handle); n++) handle = `${base}-${n}`;
  return handle;
}

/** Item, then its platform (ownership) record with the same id, then the variants. */
export async function insertItem(db: Db, businessId: string, input: CreateItemInput, now: string) {
  const { item } = input;
  const handle = item.handle ?? (await freeHandle(db, businessId, handleFromName(item.name)));
  if (item.handle !== undefined && (await isHandleTaken(db, businessId, handle))) throw handleConflict(handle);
  const id = newId('itm');
  try {
    await db
      .insertInto('items')
      .values({
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
      })
      .execute();
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

export async function findItemRow(
  db: Db,
  businessId: string,
  id: string,
  includeDeleted = false,
): Promise<ItemRow | undefined> {
  return db
    .selectFrom('items')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .$if(!includeDeleted, (q) => q.where(whereLive()))
    .executeTakeFirst();
}

/** A live item with its live variants, or undefined (missing, deleted or foreign); `includeDeleted` adds deleted ones, all variants. */
export async function findItem(
  db: Db,
  businessId: string,
  id: string,
  includeDeleted = false,
): Promise<Item | undefined> {
  const row = await findItemRow(db, businessId, id, includeDeleted);
  if (!row) return undefined;
  if (!includeDeleted) return toItem(row, await liveVariantsOf(db, businessId, [id]));
  const variants = await db
    .selectFrom('item_variants')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('item_id', '=', id)
    .orderBy('sequence')
    .orderBy('id')
    .execute();
  return toItem(row, variants);
}

export interface ListItemsOptions extends Paging {
  includeDeleted: boolean;
  updatedSince?: string;
  status?: string;
  property: PropertyFilter | null;
}

export async function listItems(db: Db, businessId: string, options: ListItemsOptions): Promise<Page<Item>> {
  let query = db.selectFrom('items').where('business_id', '=', businessId);
  if (!options.includeDeleted) query = query.where(whereLive());
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  if (options.status) query = query.where('status', '=', options.status);
  if (options.property) query = query.where(propertyCondition(db, sql.ref('properties'), options.property));
  return fetchPage(query.selectAll(), options, async (rows) => {
    const variants = await db
      .selectFrom('item_variants')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('item_id', 'in', rows.length ? rows.map((r) => r.id) : [''])
      .$if(!options.includeDeleted, (q) => q.where(whereLive()))
      .orderBy('sequence')
      .orderBy('id')
      .execute();
    const byItem = groupBy(variants, (v) => v.item_id);
    return rows.map((r) => toItem(r, byItem.get(r.id) ?? []));
  });
}

export interface ItemChanges {
  fields: Partial<
    Pick<ItemRow, 'name' | 'description' | 'img_url' | 'custom_type' | 'brand' | 'vendor_name' | 'status'>
  >;
  properties?: JsonObject;
  createVariants: CreateVariantInput[];
  updateVariants: UpdateVariantInput[];
  deleteVariants: string[];
}

/** The caller has checked the item and variant ids and runs this in a transaction. */
export async function updateItem(
  db: Db,
  businessId: string,
  item: ItemRow,
  changes: ItemChanges,
  now: string,
): Promise<void> {
  const properties =
    changes.properties === undefined
      ? {}
      : { properties: mergeStoredProperties(item.properties, changes.properties, 'properties') };
  await db
    .updateTable('items')
    .set({ ...changes.fields, ...properties, updated_at: now })
    .where('business_id', '=', businessId)
    .where('id', '=', item.id)
    .execute();

  for (const variant of changes.updateVariants) {
    const values: Record<string, unknown> = variantValues(variant);
    if (variant.properties !== undefined) {
      const current = await db
        .selectFrom('item_variants')
        .select('properties')
        .where('id', '=', variant.id)
        .executeTakeFirstOrThrow();
      values.properties = mergeStoredProperties(current.properties, variant.properties, 'updateVariants.properties');
    }
    await db
      .updateTable('item_variants')
      .set({ ...values, updated_at: now })
      .where('business_id', '=', businessId)
      .where('id', '=', variant.id)
      .execute();
  }
  if (changes.deleteVariants.length > 0) {
    await db
      .updateTable('item_variants')
      .set({ deleted_at: now, updated_at: now })
      .where('business_id', '=', businessId)
      .where('id', 'in', changes.deleteVariants)
      .execute();
  }
  const last = await db
    .selectFrom('item_variants')
    .select((eb) => eb.fn.max('sequence').as('max'))
    .where('item_id', '=', item.id)
    .executeTakeFirst();
  await insertVariants(db, businessId, item.id, changes.createVariants, Number(last?.max ?? 0) + 1, now);
}

/** Soft delete: rows stay with `deletedAt`. False when not found. */
export async function deleteItemRows(db: Db, businessId: string, id: string, now: string): Promise<boolean> {
  const result = await db
    .updateTable('items')
    .set({ deleted_at: now, updated_at: now, status: 'DELETED' })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where(whereLive())
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db
    .updateTable('item_variants')
    .set({ deleted_at: now, updated_at: now })
    .where('business_id', '=', businessId)
    .where('item_id', '=', id)
    .where(whereLive())
    .execute();
  return true;
}

/** One export page: live items after `afterId`, in id order, with live variants. */
export async function exportItems(db: Db, businessId: string, afterId: string, limit: number): Promise<Item[]> {
  const rows = await db
    .selectFrom('items')
    .selectAll()
    .where('business_id', '=', businessId)
    .where(whereLive())
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  const variants = groupBy(
    await liveVariantsOf(
      db,
      businessId,
      rows.map((r) => r.id),
    ),
    (v) => v.item_id,
  );
  return rows.map((r) => toItem(r, variants.get(r.id) ?? []));
}
