import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';
import { resolveEffectivePrice, type EffectivePrice, type PricingCandidate } from './resolve.ts';
import { whereLive } from '../db/live.ts';
import { statement } from '../db/statement.ts';
import { inList, listOf } from '../db/dialect.ts';

export type { EffectivePrice } from './resolve.ts';

export interface VariantPrice extends EffectivePrice {
  /** The variant's own unit of measure, the default for an order item. */
  unitOfMeasure: string | null;
  /** What an order item shows of its variant. */
  itemId: string;
  variantName: string;
  sku: string | null;
}

// Only lists that have an entry for a variant can price it, so entries join lists inner.
const effectiveEntriesQuery = statement(
  (db, v: { businessId: string; assignedId: string; variantIds: string[] | Record<string, string> }) =>
    db
      .selectFrom('item_variants')
      .innerJoin('item_list_entries', 'item_list_entries.item_variant_id', 'item_variants.id')
      .innerJoin('item_lists', 'item_lists.id', 'item_list_entries.item_list_id')
      .select([
        'item_variants.id as variant_id',
        'item_variants.price',
        'item_variants.cost',
        'item_variants.currency as variant_currency',
        'item_variants.unit_of_measure',
        'item_variants.item_id',
        'item_variants.variant_name',
        'item_variants.sku',
        'item_lists.id as list_id',
        'item_lists.is_default',
        'item_lists.status',
        'item_lists.global_price_factor',
        'item_lists.global_cost_factor',
        'item_lists.start_date',
        'item_lists.end_date',
        'item_list_entries.id as entry_id',
        'item_list_entries.override_flat_price',
        'item_list_entries.currency',
      ])
      .where('item_variants.business_id', '=', v.businessId)
      .where(inList(db, 'item_variants.id', v.variantIds))
      .where(whereLive('item_variants'))
      .where('item_lists.business_id', '=', v.businessId)
      .where(whereLive('item_lists'))
      .where((eb) => eb.or([eb('item_lists.id', '=', v.assignedId), eb('item_lists.is_default', '=', 1)])),
);

/**
 * What a buyer pays now for each variant: its assigned list's entry when that list applies and has
 * one, else the default list's. Missing from the map: not a live variant here, or no entry. One
 * query for any number of variants; safe inside the caller's transaction.
 */
export async function findEffectiveEntries(
  db: Db,
  businessId: string,
  assignedListId: string | null,
  variantIds: string[],
  now: Date,
): Promise<Map<string, VariantPrice>> {
  const prices = new Map<string, VariantPrice>();
  if (variantIds.length === 0) return prices;
  const assignedId = assignedListId ?? '';
  const { rows } = await db.executeQuery(
    effectiveEntriesQuery(db, { businessId, assignedId, variantIds: listOf(db, [...new Set(variantIds)]) }),
  );

  type Row = (typeof rows)[number];
  const candidate = (row: Row | undefined): PricingCandidate | null =>
    row
      ? {
          list: {
            status: row.status,
            globalPriceFactor: String(row.global_price_factor),
            globalCostFactor: String(row.global_cost_factor),
            startDate: toIso(row.start_date),
            endDate: toIso(row.end_date),
          },
          entry: { id: row.entry_id, overrideFlatPrice: row.override_flat_price, currency: row.currency },
        }
      : null;
  for (const variantId of new Set(rows.map((r) => r.variant_id))) {
    const own = rows.filter((r) => r.variant_id === variantId);
    const {
      price,
      cost,
      variant_currency: currency,
      unit_of_measure: unitOfMeasure,
      item_id: itemId,
      variant_name: variantName,
      sku,
    } = own[0];
    const resolved = resolveEffectivePrice(
      { price: String(price), cost: cost === null ? null : String(cost), currency },
      candidate(own.find((r) => r.list_id === assignedId && !r.is_default)),
      candidate(own.find((r) => Boolean(r.is_default))),
      now,
    );
    if (resolved) prices.set(variantId, { ...resolved, unitOfMeasure, itemId, variantName, sku });
  }
  return prices;
}
