import { validationError, type FieldErrors } from '../lib/errors.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { createdEvent } from '../log/events.ts';
import { findLivePartnershipIds, findLiveVariantIds, findPriceList, insertPriceList } from './repository.ts';
import type { CreatePriceListInput, PriceList } from './schema.ts';

export const PRICE_LIST_NOT_FOUND = 'Price list not found';

/** Checks every reference of a new price list (one fieldErrors entry each); foreign ids read as unknown, so nothing leaks. */
export async function createPriceList(ctx: WriteContext, input: CreatePriceListInput): Promise<Written<PriceList>> {
  const { trx: db, businessId, now } = ctx;
  const errors: FieldErrors = {};
  const { startDate, endDate } = input.itemListData;
  if (startDate != null && endDate != null && Date.parse(endDate) < Date.parse(startDate)) {
    errors['itemListData.endDate'] = 'Must not be before startDate';
  }

  const entries = input.entries ?? [];
  const variants = await findLiveVariantIds(
    db,
    businessId,
    entries.map((e) => e.itemVariantId),
  );
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (!variants.has(entry.itemVariantId)) errors[`entries.${i}.itemVariantId`] = 'Item variant not found';
    else if (seen.has(entry.itemVariantId))
      errors[`entries.${i}.itemVariantId`] = 'Item variant is listed more than once';
    seen.add(entry.itemVariantId);
  });

  const partnerships = input.partnerships ?? [];
  const live = await findLivePartnershipIds(db, businessId, partnerships);
  partnerships.forEach((id, i) => {
    if (!live.has(id))
      errors[`partnerships.${i}`] = id.startsWith('phm_')
        ? "Partnership not found: this is a buyer's id; send the buyer's partnershipId (prt_…)"
        : 'Partnership not found';
  });

  if (Object.keys(errors).length > 0) throw validationError(errors);
  const id = await insertPriceList(db, businessId, input, now);
  const resource = (await findPriceList(db, businessId, id))!;
  ctx.emit(createdEvent('price_list', resource));
  return { resource, before: null };
}
