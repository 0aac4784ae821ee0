import { changesNothing, endUpdate, unchanged } from '../write/update.ts';
import { requireSomethingToUpdate } from '../lib/patch.ts';
import { ApiError, badRequest, notFound, validationError } from '../lib/errors.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { createdEvent, namedEvent } from '../log/events.ts';
import { deleteItemRows, findItem, findItemRow, insertItems, updateItem, type ItemChanges } from './repository.ts';
import { countLiveVariants, findMissingVariants, liveVariantsOf, variantValues } from './variant-repository.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { toItem, type ItemRow, type VariantRow } from './mapper.ts';
import type { CreateItemInput, Item, UpdateItemInput } from './schema.ts';

export const ITEM_NOT_FOUND = 'Item not found';

/** `variantIds` in the order the variants were given. */
export async function createItem(
  ctx: WriteContext,
  input: CreateItemInput,
): Promise<Written<Item> & { variantIds: string[] }> {
  const [created] = await createItems(ctx, [input]);
  if (created instanceof ApiError) throw created;
  return { ...created, before: null };
}

/**
 * Creates items in one go, as `createItem` each (bulk import applies a run of item lines this way):
 * each input's item, or the error that input alone fails with.
 */
export async function createItems(
  ctx: WriteContext,
  inputs: CreateItemInput[],
): Promise<({ resource: Item; variantIds: string[] } | ApiError)[]> {
  const refused = inputs.map(({ variants }) => sameNames(variants.map((v, i) => [`variants.${i}`, v.variantName])));
  const inserted = await insertItems(
    ctx.trx,
    ctx.businessId,
    inputs.filter((_, i) => refused[i] === undefined),
    ctx.now,
  );
  let next = 0;
  return inputs.map((_, i) => {
    const r = refused[i] ?? inserted[next++]!;
    if (r instanceof ApiError) return r;
    const resource = toItem(r.item, r.variants);
    ctx.emit(createdEvent('item', resource));
    return { resource, variantIds: r.variantIds };
  });
}

const DEFAULT_VARIANT_NAME = 'Default';

/**
 * 400 naming each variant, by its path, whose name one before it in `named` has: an item's variants
 * are told apart by name (a single-variant item's is Default). `named` is [path, name], the names
 * that stay or are set, those set by the request last, so that a name already repeated among the
 * stored variants refuses nothing the request does not set.
 */
function sameNames(named: Array<[string | null, string | undefined]>): ApiError | undefined {
  const seen = new Set<string>();
  const errors: Record<string, string> = {};
  for (const [path, given] of named) {
    const name = given ?? DEFAULT_VARIANT_NAME;
    if (seen.has(name) && path !== null)
      errors[`${path}.variantName`] =
        `Another variant of this item is named '${name}': give each variant a name of its own`;
    seen.add(name);
  }
  return Object.keys(errors).length > 0 ? validationError(errors) : undefined;
}

/** The item as `changes` would leave it, where they create and delete no variant (updateItem's writes). */
function planned(item: ItemRow, variants: VariantRow[], changes: ItemChanges): Item {
  const properties =
    changes.properties === undefined
      ? {}
      : { properties: mergeStoredProperties(item.properties, changes.properties, 'properties') };
  const rows = variants.map((variant) => {
    let row = variant;
    for (const u of changes.updateVariants.filter((update) => update.id === variant.id)) {
      const properties =
        u.properties === undefined
          ? {}
          : { properties: mergeStoredProperties(row.properties, u.properties, 'updateVariants.properties') };
      row = { ...row, ...variantValues(u), ...properties };
    }
    return row;
  });
  rows.sort((a, b) => Number(a.sequence) - Number(b.sequence) || (a.id < b.id ? -1 : 1));
  return toItem({ ...item, ...changes.fields, ...properties }, rows);
}

export async function patchItem(ctx: WriteContext, id: string, input: UpdateItemInput): Promise<Written<Item>> {
  const { trx: db, businessId, now } = ctx;
  requireSomethingToUpdate(input);
  const item = await findItemRow(db, businessId, id);
  if (!item) throw notFound(ITEM_NOT_FOUND);
  const variants = await liveVariantsOf(db, businessId, [id]);
  const before = toItem(item, variants);

  const updates = input.updateVariants ?? [];
  const empty = updates.flatMap((v, i) => (Object.keys(v).length === 1 ? [`updateVariants.${i}`] : []));
  if (empty.length > 0)
    throw validationError(Object.fromEntries(empty.map((path) => [path, 'No fields to update besides id'])));
  const deletes = input.deleteVariants ?? [];
  const missing = await findMissingVariants(db, businessId, id, [...updates.map((v) => v.id), ...deletes]);
  if (missing.length > 0) throw notFound(`Item variant(s) not found: ${missing.join(', ')}`);

  const creates = input.createVariants ?? [];
  // A rename is a name that changes: one sent again as stored sets nothing.
  const stored = new Map(variants.map((v) => [v.id, v.variant_name]));
  const renamed = new Map(
    updates.flatMap((u, i) =>
      u.variantName === undefined || u.variantName === stored.get(u.id) ? [] : [[u.id, i] as const],
    ),
  );
  const clash = sameNames([
    ...variants
      .filter((v) => !deletes.includes(v.id) && !renamed.has(v.id))
      .map((v) => [null, v.variant_name] as const),
    ...[...renamed].map(([, i]) => [`updateVariants.${i}`, updates[i].variantName] as const),
    ...creates.map((v, i) => [`createVariants.${i}`, v.variantName] as const),
  ] as Array<[string | null, string | undefined]>);
  if (clash) throw clash;
  if (
    deletes.length > 0 &&
    (await countLiveVariants(db, businessId, id)) - new Set(deletes).size + creates.length < 1
  ) {
    throw badRequest('An item must keep at least one variant');
  }

  const changes: ItemChanges = {
    fields: {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.description !== undefined && { description: input.description }),
      ...(input.imgUrl !== undefined && { img_url: input.imgUrl }),
      ...(input.customType !== undefined && { custom_type: input.customType }),
      ...(input.brand !== undefined && { brand: input.brand }),
      ...(input.vendorName !== undefined && { vendor_name: input.vendorName }),
      ...(input.status !== undefined && { status: input.status }),
    },
    properties: input.properties,
    createVariants: creates,
    updateVariants: updates,
    deleteVariants: deletes,
  };
  if (creates.length + deletes.length === 0 && changesNothing(before, planned(item, variants, changes)))
    return unchanged(before);
  await updateItem(db, businessId, item, changes, now);
  const resource = (await findItem(db, businessId, id))!;
  return endUpdate(ctx, 'item', before, resource);
}

/** 404 when there is no live item. */
export async function deleteItem(ctx: WriteContext, id: string): Promise<Written<Item>> {
  const { trx: db, businessId, now } = ctx;
  const before = await findItem(db, businessId, id);
  if (!before || !(await deleteItemRows(db, businessId, id, now))) throw notFound(ITEM_NOT_FOUND);
  const resource = (await findItem(db, businessId, id, true))!;
  ctx.emit(namedEvent('item', 'deleted', resource));
  return { resource, before };
}
