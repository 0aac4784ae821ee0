import { sql } from 'kysely';
import { isUniqueViolation } from '../db/dialect.ts';
import { fetchPage, propertyCondition, type Page, type Paging, type PropertyFilter } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import { chooseHandles, handleConflict } from './handles.ts';
import { insertRows, insertRowsReturning } from '../db/bulk.ts';
import { sendRead } from '../db/pipeline.ts';
import { defaultListIdQuery } from '../pricing/repository.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { newId } from '../lib/ids.ts';
import { writeJson, type JsonObject } from '../lib/json.ts';
import { toItem, type ItemRow, type VariantRow } from './mapper.ts';
import type { CreateItemInput, CreateVariantInput, Item, UpdateVariantInput } from './schema.ts';
import { insertVariants, insertVariantsOf, liveVariantsOf, variantValues } from './variant-repository.ts';
import { groupBy } from '../lib/group.ts';
import { whereLive } from '../db/live.ts';

/** The items table's columns, in the order the multi-row inserts (here and the demo's) send them. */
export const ITEM_COLUMNS = [
  'id',
  'business_id',
  'name',
  'handle',
  'description',
  'img_url',
  'custom_type',
  'brand',
  'vendor_name',
  'type',
  'status',
  'properties',
  'created_at',
  'updated_at',
] as const;

/**
 * Items, their platform (ownership) records with the same ids, then their variants: one multi-row
 * statement per table for all of `inputs`, sent one behind the other (decision 0053). An input whose
 * handle is taken gets its 409 in its place and stores nothing; the others get their item and its
 * variants as stored, and the variants' ids in the order given.
 */
export async function insertItems(
  db: Db,
  businessId: string,
  inputs: CreateItemInput[],
  now: string,
): Promise<({ item: ItemRow; variants: VariantRow[]; variantIds: string[] } | ApiError)[]> {
  const list = await sendRead<{ id: string }>(db, defaultListIdQuery(db, businessId));
  const handles = await chooseHandles(db, businessId, inputs);
  const stored: { id: string; input: CreateItemInput }[] = [];
  const rows: unknown[][] = [];
  for (const [i, input] of inputs.entries()) {
    const handle = handles[i];
    if (handle instanceof ApiError) continue;
    const { item } = input;
    const id = newId('itm');
    stored.push({ id, input });
    rows.push([
      id,
      businessId,
      item.name,
      handle,
      item.description ?? null,
      item.imgUrl ?? null,
      item.customType ?? null,
      item.brand ?? null,
      item.vendorName ?? null,
      item.type ?? 'OTHER',
      item.status ?? 'ACTIVE',
      writeJson(item.properties),
      now,
      now,
    ]);
  }
  if (stored.length === 0) return handles as ApiError[];
  // Another write took a handle between the read and the insert: the database's unique index decides.
  const conflict = (error: unknown) =>
    isUniqueViolation(error) && stored.length === 1 ? handleConflict(rows[0][3] as string) : error;
  // On SQLite the insert's error comes here, on PostgreSQL with its rows.
  const items = await insertRowsReturning<ItemRow>(db, 'items', ITEM_COLUMNS, rows).catch((error) => {
    throw conflict(error);
  });
  await insertRows(
    db,
    'platform_items',
    ['id', 'business_id', 'created_at'],
    stored.map(({ id }) => [id, businessId, now]),
    {},
    { ahead: true },
  );
  const [listRow] = (await list.answer).rows;
  if (!listRow) throw new Error('The business has no default item list');
  const variants = await insertVariantsOf(
    db,
    businessId,
    listRow.id,
    stored.map(({ id, input }) => ({ itemId: id, variants: input.variants, firstSequence: 1 })),
    now,
  );
  const itemRows = await items.rows().catch((error) => {
    throw conflict(error);
  });
  const byId = new Map(itemRows.map((row) => [row.id, row]));
  const variantsOf = groupBy(await variants.stored(), (v) => v.item_id);
  let next = 0;
  return handles.map((handle) => {
    if (handle instanceof ApiError) return handle;
    const k = next++;
    const { id } = stored[k];
    // As a GET orders them; `variantIds` stay in the order given.
    const own = [...(variantsOf.get(id) ?? [])].sort(
      (a, b) => Number(a.sequence) - Number(b.sequence) || (a.id < b.id ? -1 : 1),
    );
    return { item: byId.get(id)!, variants: own, variantIds: variants.ids[k] };
  });
}

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
