import { multiply, roundMoney } from '../lib/money.ts';

/** The terms of a price list that decide whether and how it prices a variant; decimals as text. */
export interface ListTerms {
  status: string;
  globalPriceFactor: string;
  globalCostFactor: string;
  /** Null: open-ended. */
  startDate: string | null;
  endDate: string | null;
}

export interface EntryTerms {
  id: string;
  overrideFlatPrice: string | null;
  currency: string | null;
}

export interface VariantTerms {
  price: string;
  cost: string | null;
  currency: string;
}

export interface PricingCandidate {
  list: ListTerms;
  entry: EntryTerms | null;
}

export interface EffectivePrice {
  entryId: string;
  price: string;
  cost: string;
  currency: string;
}

/** ACTIVE, and `now` within its dates, both ends inclusive. */
export function isListApplicable(list: ListTerms, now: Date): boolean {
  if (list.status !== 'ACTIVE') return false;
  const t = now.getTime();
  if (list.startDate !== null && t < Date.parse(list.startDate)) return false;
  if (list.endDate !== null && t > Date.parse(list.endDate)) return false;
  return true;
}

/**
 * The override when set, else price times the price factor; cost (0 when none) times the cost factor.
 * Decimal only; a product is rounded half up to the API's 6 decimals (decision 0077).
 */
export function priceEntry(variant: VariantTerms, list: ListTerms, entry: EntryTerms): EffectivePrice {
  return {
    entryId: entry.id,
    price: entry.overrideFlatPrice ?? roundMoney(multiply(variant.price, list.globalPriceFactor)),
    cost: roundMoney(multiply(variant.cost ?? '0', list.globalCostFactor)),
    currency: entry.currency ?? variant.currency,
  };
}

/** The assigned list when it applies now and has an entry, else the default list (always applies); null when neither has one. */
export function resolveEffectivePrice(
  variant: VariantTerms,
  assigned: PricingCandidate | null,
  fallback: PricingCandidate | null,
  now: Date,
): EffectivePrice | null {
  if (assigned?.entry && isListApplicable(assigned.list, now))
    return priceEntry(variant, assigned.list, assigned.entry);
  if (fallback?.entry) return priceEntry(variant, fallback.list, fallback.entry);
  return null;
}
