import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';
import { resolveEffectivePrice, type EffectivePrice, type PricingCandidate } from './resolve.ts';

export type { EffectivePrice } from './resolve.ts';

/**
 * What a partnership's buyer pays for a variant right now: the entry of its assigned list when
 * that list applies and lists the variant, else the default list's entry. Null when the variant
 * or partnership is not a live one of this business, or no list has an entry for the variant.
 * Three queries; safe inside the caller's transaction.
 */
export async function findEffectiveEntry(
  db: Db, businessId: string, partnershipId: string, variantId: string, now: Date,
): Promise<EffectivePrice | null> {
  const variant = await db.selectFrom('item_variants').select(['price', 'cost', 'currency'])
    .where('business_id', '=', businessId).where('id', '=', variantId).where('deleted_at', 'is', null)
    .executeTakeFirst();
  const partnership = await db.selectFrom('partnerships').select('item_list_id')
    .where('business_id', '=', businessId).where('id', '=', partnershipId).where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!variant || !partnership) return null;

  const assignedId = partnership.item_list_id ?? '';
  const lists = await db.selectFrom('item_lists')
    .leftJoin('item_list_entries', (join) => join
      .onRef('item_list_entries.item_list_id', '=', 'item_lists.id')
      .on('item_list_entries.item_variant_id', '=', variantId))
    .select([
      'item_lists.id as list_id', 'item_lists.is_default', 'item_lists.status', 'item_lists.global_price_factor',
      'item_lists.global_cost_factor', 'item_lists.start_date', 'item_lists.end_date',
      'item_list_entries.id as entry_id', 'item_list_entries.override_flat_price', 'item_list_entries.currency',
    ])
    .where('item_lists.business_id', '=', businessId).where('item_lists.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('item_lists.id', '=', assignedId), eb('item_lists.is_default', '=', 1)]))
    .execute();

  const candidate = (row: (typeof lists)[number] | undefined): PricingCandidate | null => row ? {
    list: {
      status: row.status,
      globalPriceFactor: String(row.global_price_factor),
      globalCostFactor: String(row.global_cost_factor),
      startDate: toIso(row.start_date),
      endDate: toIso(row.end_date),
    },
    entry: row.entry_id === null ? null : { id: row.entry_id, overrideFlatPrice: row.override_flat_price, currency: row.currency },
  } : null;
  const assigned = lists.find((l) => l.list_id === assignedId && !l.is_default);
  const fallback = lists.find((l) => Boolean(l.is_default));
  return resolveEffectivePrice(
    { price: String(variant.price), cost: variant.cost === null ? null : String(variant.cost), currency: variant.currency },
    candidate(assigned), candidate(fallback), now,
  );
}
