import { fetchPage, type Page, type Paging } from '../db/list.ts';
import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { toDecimalString } from '../lib/money.ts';
import { parseDateTime } from '../lib/time.ts';
import type { CreatePriceListInput, PriceList } from './schema.ts';
import { toPriceList, type EntryRow, type ItemListRow } from './mapper.ts';
import { whereLive } from '../db/live.ts';

export async function findDefaultListId(db: Db, businessId: string): Promise<string> {
  return (await defaultListIdQuery(db, businessId).executeTakeFirstOrThrow()).id;
}

/** Every business has its default item list from its creation on. */
export const defaultListIdQuery = (db: Db, businessId: string) =>
  db.selectFrom('item_lists').select('id').where('business_id', '=', businessId).where('is_default', '=', 1);

export async function findLiveVariantIds(db: Db, businessId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('item_variants')
    .select('id')
    .where('business_id', '=', businessId)
    .where('id', 'in', ids)
    .where(whereLive())
    .execute();
  return new Set(rows.map((r) => r.id));
}

export async function findLivePartnershipIds(db: Db, businessId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('partnerships')
    .select('id')
    .where('business_id', '=', businessId)
    .where('id', 'in', ids)
    .where(whereLive())
    .execute();
  return new Set(rows.map((r) => r.id));
}

const ENTRY_CHUNK = 500;

/** Always a new, non-default list; the caller checked the references in the same transaction. */
export async function insertPriceList(
  db: Db,
  businessId: string,
  input: CreatePriceListInput,
  now: string,
): Promise<string> {
  const data = input.itemListData;
  const id = newId('list');
  await db
    .insertInto('item_lists')
    .values({
      id,
      business_id: businessId,
      label: data.label,
      status: data.status ?? 'ACTIVE',
      is_default: 0,
      global_price_factor: toDecimalString(data.globalPriceFactor ?? 1),
      global_cost_factor: toDecimalString(data.globalCostFactor ?? 1),
      start_date: data.startDate == null ? null : parseDateTime(data.startDate),
      end_date: data.endDate == null ? null : parseDateTime(data.endDate),
      created_at: now,
      updated_at: now,
    })
    .execute();
  const entries = input.entries ?? [];
  // Chunked under both backends' bound-parameter limits.
  for (let start = 0; start < entries.length; start += ENTRY_CHUNK) {
    await db
      .insertInto('item_list_entries')
      .values(
        entries.slice(start, start + ENTRY_CHUNK).map((e) => ({
          id: newId('ile'),
          business_id: businessId,
          item_list_id: id,
          item_variant_id: e.itemVariantId,
          override_flat_price: e.overrideFlatPrice == null ? null : toDecimalString(e.overrideFlatPrice),
          currency: e.currency ?? null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  }
  await assignPriceList(db, businessId, id, [...new Set(input.partnerships ?? [])], now);
  return id;
}

/** Points each partnership at the list; the lists left and the buyers get a new updatedAt, so `updatedSince` sees the move. */
export async function assignPriceList(
  db: Db,
  businessId: string,
  listId: string,
  partnershipIds: string[],
  now: string,
): Promise<void> {
  if (partnershipIds.length === 0) return;
  const previous = await db
    .selectFrom('partnerships')
    .select(['item_list_id', 'phantom_id'])
    .where('business_id', '=', businessId)
    .where('id', 'in', partnershipIds)
    .execute();
  await db
    .updateTable('partnerships')
    .set({ item_list_id: listId, updated_at: now })
    .where('business_id', '=', businessId)
    .where('id', 'in', partnershipIds)
    .execute();
  const leftLists = [
    ...new Set(previous.map((p) => p.item_list_id).filter((l): l is string => l !== null && l !== listId)),
  ];
  if (leftLists.length > 0) {
    await db
      .updateTable('item_lists')
      .set({ updated_at: now })
      .where('business_id', '=', businessId)
      .where('id', 'in', leftLists)
      .execute();
  }
  await db
    .updateTable('phantoms')
    .set({ updated_at: now })
    .where('business_id', '=', businessId)
    .where(
      'id',
      'in',
      previous.map((p) => p.phantom_id),
    )
    .execute();
}

/** Entries (of live variants) and partnership ids for any number of lists, in two queries. */
async function loadListDetails(db: Db, businessId: string, listIds: string[]) {
  if (listIds.length === 0)
    return { entries: [] as EntryRow[], partnerships: [] as Array<{ id: string; item_list_id: string | null }> };
  // One after another: a transaction's one connection runs one query at a time.
  const entries = await db
    .selectFrom('item_list_entries')
    .innerJoin('item_variants', 'item_variants.id', 'item_list_entries.item_variant_id')
    .select([
      'item_list_entries.id',
      'item_list_entries.item_list_id',
      'item_list_entries.item_variant_id',
      'item_variants.item_id',
      'item_list_entries.override_flat_price',
      'item_list_entries.currency',
    ])
    .where('item_list_entries.business_id', '=', businessId)
    .where('item_list_entries.item_list_id', 'in', listIds)
    .where(whereLive('item_variants'))
    // Catalogue order: entry ids made in the same millisecond do not sort in request order.
    .orderBy('item_variants.created_at')
    .orderBy('item_variants.item_id')
    .orderBy('item_variants.sequence')
    .orderBy('item_list_entries.id')
    .execute();
  const partnerships = await db
    .selectFrom('partnerships')
    .select(['id', 'item_list_id'])
    .where('business_id', '=', businessId)
    .where('item_list_id', 'in', listIds)
    .where(whereLive())
    .orderBy('id')
    .execute();
  return { entries, partnerships };
}

async function toPriceLists(db: Db, businessId: string, rows: ItemListRow[]): Promise<PriceList[]> {
  const { entries, partnerships } = await loadListDetails(
    db,
    businessId,
    rows.map((r) => r.id),
  );
  return rows.map((r) =>
    toPriceList(
      r,
      entries.filter((e) => e.item_list_id === r.id),
      partnerships.filter((p) => p.item_list_id === r.id).map((p) => p.id),
    ),
  );
}

export async function findPriceList(db: Db, businessId: string, id: string): Promise<PriceList | undefined> {
  const row = await db
    .selectFrom('item_lists')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where(whereLive())
    .executeTakeFirst();
  return row && (await toPriceLists(db, businessId, [row]))[0];
}

export interface ListPriceListsOptions extends Paging {
  status?: string;
  updatedSince?: string;
}

export async function listPriceLists(
  db: Db,
  businessId: string,
  options: ListPriceListsOptions,
): Promise<Page<PriceList>> {
  let query = db.selectFrom('item_lists').where('business_id', '=', businessId).where(whereLive());
  if (options.status) query = query.where('status', '=', options.status);
  if (options.updatedSince) query = query.where('updated_at', '>', options.updatedSince);
  return fetchPage(query.selectAll(), options, (rows) => toPriceLists(db, businessId, rows));
}
