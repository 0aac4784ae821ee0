import { sql } from 'kysely';
import { fetchPage, propertyCondition, type Page, type Paging, type PropertyFilter } from '../db/list.ts';
import { anyOf } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import { statement } from '../db/statement.ts';
import { newId } from '../lib/ids.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { writeJson, type JsonObject } from '../lib/json.ts';
import { findDefaultListId } from '../pricing/repository.ts';
import { loadContacts } from './contact-repository.ts';
import type { Buyer, CreateBuyerInput } from './schema.ts';
import { toBuyer, type BuyerRow } from './mapper.ts';
import { whereLive } from '../db/live.ts';

export interface CreatedBuyer {
  phantomId: string;
  partnershipId: string;
}

/** The phantom, then the phantom buyer sharing its id, then the partnership on the default list. Contacts follow. */
export async function insertBuyer(
  db: Db,
  businessId: string,
  input: CreateBuyerInput,
  now: string,
): Promise<CreatedBuyer> {
  const { buyer } = input;
  const phantomId = newId('phm');
  await db
    .insertInto('phantoms')
    .values({
      id: phantomId,
      business_id: businessId,
      name: buyer.name,
      legal_name: buyer.legalName ?? null,
      // Primary contacts are settled once the contacts exist, so both always agree.
      primary_email: null,
      primary_phone: null,
      status: 'ACTIVE',
      buyer_info: writeJson(buyer.buyerInfo),
      properties: writeJson(buyer.properties),
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db.insertInto('phantom_buyers').values({ id: phantomId, business_id: businessId, created_at: now }).execute();
  const partnershipId = newId('prt');
  await db
    .insertInto('partnerships')
    .values({
      id: partnershipId,
      business_id: businessId,
      phantom_id: phantomId,
      status: input.partnershipStatus ?? 'ACTIVE',
      item_list_id: await findDefaultListId(db, businessId),
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { phantomId, partnershipId };
}

function selectBuyers(db: Db, businessId: string) {
  return db
    .selectFrom('phantoms')
    .innerJoin('partnerships', (join) =>
      join
        .onRef('partnerships.phantom_id', '=', 'phantoms.id')
        .onRef('partnerships.business_id', '=', 'phantoms.business_id'),
    )
    .where('phantoms.business_id', '=', businessId);
}

/** A live buyer (phantom with its partnership), or undefined: missing, deleted or foreign. */
export async function findBuyerRow(db: Db, businessId: string, id: string): Promise<BuyerRow | undefined> {
  return selectBuyers(db, businessId)
    .selectAll('phantoms')
    .select([
      'partnerships.id as partnership_id',
      'partnerships.status as partnership_status',
      'partnerships.item_list_id',
    ])
    .where('phantoms.id', '=', id)
    .where(whereLive('phantoms'))
    .executeTakeFirst();
}

/** A live buyer's partnership and assigned item list: what ordering needs. */
export type BuyerPartnership = { id: string; itemListId: string | null };

/** Live buyers with their live partnerships: what `findBuyerPartnership(s)` read. */
const livePartnerships = (db: Db, businessId: string) =>
  selectBuyers(db, businessId)
    .select(['phantoms.id as buyer_id', 'partnerships.id', 'partnerships.item_list_id'])
    .where(whereLive('phantoms'))
    .where(whereLive('partnerships'));

/** A live buyer's partnership, or undefined: missing, deleted or foreign. */
export async function findBuyerPartnership(
  db: Db,
  businessId: string,
  id: string,
): Promise<BuyerPartnership | undefined> {
  const {
    rows: [row],
  } = await db.executeQuery(buyerPartnershipQuery(db, { businessId, id }));
  return row && { id: row.id, itemListId: row.item_list_id };
}

const buyerPartnershipQuery = statement((db, v: { businessId: string; id: string }) =>
  livePartnerships(db, v.businessId).where('phantoms.id', '=', v.id),
);

/**
 * `findBuyerPartnership` of many buyers in one query: an entry for each id asked, undefined where
 * the buyer is missing, deleted or foreign (an import's orders name many buyers).
 */
export async function findBuyerPartnerships(
  db: Db,
  businessId: string,
  ids: string[],
): Promise<Map<string, BuyerPartnership | undefined>> {
  const found = new Map<string, BuyerPartnership | undefined>(ids.map((id) => [id, undefined]));
  if (found.size === 0) return found;
  const rows = await livePartnerships(db, businessId)
    .where(anyOf(db, 'phantoms.id', [...found.keys()]))
    .execute();
  for (const row of rows) found.set(row.buyer_id, { id: row.id, itemListId: row.item_list_id });
  return found;
}

export async function findBuyer(db: Db, businessId: string, id: string): Promise<Buyer | undefined> {
  const row = await findBuyerRow(db, businessId, id);
  return row && toBuyer(row, await loadContacts(db, businessId, [id]));
}

export interface ListBuyersOptions extends Paging {
  includeDeleted: boolean;
  updatedSince?: string;
  partnershipStatus?: string;
  property: PropertyFilter | null;
}

export async function listBuyers(db: Db, businessId: string, options: ListBuyersOptions): Promise<Page<Buyer>> {
  let query = selectBuyers(db, businessId);
  if (!options.includeDeleted) query = query.where(whereLive('phantoms'));
  if (options.updatedSince) query = query.where('phantoms.updated_at', '>', options.updatedSince);
  if (options.partnershipStatus) query = query.where('partnerships.status', '=', options.partnershipStatus);
  if (options.property) query = query.where(propertyCondition(db, sql.ref('phantoms.properties'), options.property));

  const rows = query
    .selectAll('phantoms')
    .select([
      'partnerships.id as partnership_id',
      'partnerships.status as partnership_status',
      'partnerships.item_list_id',
    ]);
  return fetchPage(rows, options, (page) => withContacts(db, businessId, page), 'phantoms');
}

export interface PhantomChanges {
  name?: string;
  legalName?: string | null;
  buyerInfo?: JsonObject | null;
  properties?: JsonObject;
}

/** Any buyer PATCH moves the phantom's updatedAt, so `updatedSince` sees contact and partnership changes too. */
export async function updatePhantom(
  db: Db,
  businessId: string,
  row: BuyerRow,
  changes: PhantomChanges,
  now: string,
): Promise<void> {
  await db
    .updateTable('phantoms')
    .set({
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.legalName !== undefined && { legal_name: changes.legalName }),
      ...(changes.buyerInfo !== undefined && {
        buyer_info:
          changes.buyerInfo === null
            ? null
            : mergeStoredProperties(row.buyer_info, changes.buyerInfo, 'buyer.buyerInfo'),
      }),
      ...(changes.properties !== undefined && {
        properties: mergeStoredProperties(row.properties, changes.properties, 'buyer.properties'),
      }),
      updated_at: now,
    })
    .where('business_id', '=', businessId)
    .where('id', '=', row.id)
    .execute();
}

export async function setPrimaryValues(
  db: Db,
  businessId: string,
  phantomId: string,
  values: { primary_email?: string | null; primary_phone?: string | null },
): Promise<void> {
  if (Object.keys(values).length === 0) return;
  await db
    .updateTable('phantoms')
    .set(values)
    .where('business_id', '=', businessId)
    .where('id', '=', phantomId)
    .execute();
}

export async function updatePartnershipStatus(
  db: Db,
  businessId: string,
  partnershipId: string,
  status: string,
  now: string,
): Promise<void> {
  await db
    .updateTable('partnerships')
    .set({ status, updated_at: now })
    .where('business_id', '=', businessId)
    .where('id', '=', partnershipId)
    .execute();
}

/** One export page: live buyers after `afterId`, in id order, with contacts. */
export async function exportBuyers(db: Db, businessId: string, afterId: string, limit: number): Promise<Buyer[]> {
  const rows = await selectBuyers(db, businessId)
    .selectAll('phantoms')
    .select([
      'partnerships.id as partnership_id',
      'partnerships.status as partnership_status',
      'partnerships.item_list_id',
    ])
    .where(whereLive('phantoms'))
    .where('phantoms.id', '>', afterId)
    .orderBy('phantoms.id')
    .limit(limit)
    .execute();
  return withContacts(db, businessId, rows);
}

/** Buyers from their rows, with every row's contacts loaded in one query per kind. */
async function withContacts(db: Db, businessId: string, rows: BuyerRow[]): Promise<Buyer[]> {
  const contacts = await loadContacts(
    db,
    businessId,
    rows.map((r) => r.id),
  );
  const of = <T extends { phantom_id: string }>(list: T[], id: string) => list.filter((c) => c.phantom_id === id);
  return rows.map((r) =>
    toBuyer(r, {
      emails: of(contacts.emails, r.id),
      phones: of(contacts.phones, r.id),
      locations: of(contacts.locations, r.id),
    }),
  );
}
