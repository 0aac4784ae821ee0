import type { Selectable } from 'kysely';
import type { Db } from '../db/types.ts';
import type { PhantomEmailTable, PhantomLocationTable, PhantomPhoneTable } from './table.ts';
import { newId } from '../lib/ids.ts';
import type {
  CreateEmailInput,
  CreateLocationInput,
  CreatePhoneInput,
  UpdateEmailInput,
  UpdateLocationInput,
  UpdatePhoneInput,
} from './schema.ts';

export type EmailRow = Selectable<PhantomEmailTable>;
export type PhoneRow = Selectable<PhantomPhoneTable>;
export type LocationRow = Selectable<PhantomLocationTable>;
export type ContactTable = 'phantom_emails' | 'phantom_phones' | 'phantom_locations';

export interface ContactRows {
  emails: EmailRow[];
  phones: PhoneRow[];
  locations: LocationRow[];
}

/** One query per contact table for any number of buyers: three for a page, not 3n. */
export async function loadContacts(db: Db, businessId: string, phantomIds: string[]): Promise<ContactRows> {
  if (phantomIds.length === 0) return { emails: [], phones: [], locations: [] };
  // One after another: a transaction or snapshot is one connection, one query at a time.
  const emails = await db
    .selectFrom('phantom_emails')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('phantom_id', 'in', phantomIds)
    .orderBy('sequence')
    .orderBy('id')
    .execute();
  const phones = await db
    .selectFrom('phantom_phones')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('phantom_id', 'in', phantomIds)
    .orderBy('sequence')
    .orderBy('id')
    .execute();
  const locations = await db
    .selectFrom('phantom_locations')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('phantom_id', 'in', phantomIds)
    .orderBy('sequence')
    .orderBy('id')
    .execute();
  return { emails, phones, locations };
}

/** Ids among `ids` that are not contacts of this buyer in `table`. */
export async function findMissingContacts(
  db: Db,
  table: ContactTable,
  businessId: string,
  phantomId: string,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = new Set(
    (
      await db
        .selectFrom(table)
        .select('id')
        .where('business_id', '=', businessId)
        .where('phantom_id', '=', phantomId)
        .where('id', 'in', ids)
        .execute()
    ).map((r) => r.id),
  );
  return [...new Set(ids)].filter((id) => !found.has(id));
}

/** Contacts are hard-deleted: they have no identity outside their buyer and nothing references them. */
export async function deleteContacts(
  db: Db,
  table: ContactTable,
  businessId: string,
  phantomId: string,
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .deleteFrom(table)
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .where('id', 'in', ids)
    .execute();
}

export async function nextSequence(
  db: Db,
  table: ContactTable,
  businessId: string,
  phantomId: string,
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.max('sequence').as('max'))
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .executeTakeFirst();
  return Number(row?.max ?? 0) + 1;
}

const owned = (businessId: string, phantomId: string, sequence: number, now: string) => ({
  business_id: businessId,
  phantom_id: phantomId,
  sequence,
  created_at: now,
  updated_at: now,
});

/** Inserted as not primary; the primary flag is settled afterwards by setPrimaryContact. */
export async function insertEmails(
  db: Db,
  businessId: string,
  phantomId: string,
  inputs: CreateEmailInput[],
  firstSequence: number,
  now: string,
): Promise<EmailRow[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map((e, i) => ({
    id: newId('eml'),
    ...owned(businessId, phantomId, firstSequence + i, now),
    email: e.email,
    contact_name: e.contactName ?? null,
    is_primary: 0,
    is_verified: 0,
    verified_at: null,
  }));
  await db.insertInto('phantom_emails').values(rows).execute();
  return rows;
}

export async function insertPhones(
  db: Db,
  businessId: string,
  phantomId: string,
  inputs: CreatePhoneInput[],
  firstSequence: number,
  now: string,
): Promise<PhoneRow[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map((p, i) => ({
    id: newId('phn'),
    ...owned(businessId, phantomId, firstSequence + i, now),
    phone: p.phone,
    contact_name: p.contactName ?? null,
    is_primary: 0,
    is_verified: 0,
    verified_at: null,
  }));
  await db.insertInto('phantom_phones').values(rows).execute();
  return rows;
}

export function locationValues(input: UpdateLocationInput | CreateLocationInput) {
  return {
    ...(input.label !== undefined && { label: input.label }),
    ...(input.type !== undefined && { type: input.type }),
    ...(input.status !== undefined && { status: input.status }),
    ...(input.addressLine1 !== undefined && { address_line1: input.addressLine1 }),
    ...(input.addressLine2 !== undefined && { address_line2: input.addressLine2 }),
    ...(input.city !== undefined && { city: input.city }),
    ...(input.state !== undefined && { state: input.state }),
    ...(input.postcode !== undefined && { postcode: input.postcode }),
    ...(input.country !== undefined && { country: input.country }),
  };
}

export async function insertLocations(
  db: Db,
  businessId: string,
  phantomId: string,
  inputs: CreateLocationInput[],
  firstSequence: number,
  now: string,
): Promise<void> {
  if (inputs.length === 0) return;
  await db
    .insertInto('phantom_locations')
    .values(
      inputs.map((l, i) => ({
        id: newId('loc'),
        ...owned(businessId, phantomId, firstSequence + i, now),
        label: null,
        type: null,
        status: 'ACTIVE',
        address_line2: null,
        city: null,
        state: null,
        postcode: null,
        country: null,
        address_line1: l.addressLine1,
        ...locationValues(l),
      })),
    )
    .execute();
}

/** `isPrimary: true` is left to setPrimaryContact; `false` clears the flag here. */
export async function updateEmail(
  db: Db,
  businessId: string,
  phantomId: string,
  input: UpdateEmailInput,
  now: string,
): Promise<void> {
  await db
    .updateTable('phantom_emails')
    .set({
      ...(input.email !== undefined && { email: input.email }),
      ...(input.contactName !== undefined && { contact_name: input.contactName }),
      ...(input.isPrimary === false && { is_primary: 0 }),
      updated_at: now,
    })
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .where('id', '=', input.id)
    .execute();
}

export async function updatePhone(
  db: Db,
  businessId: string,
  phantomId: string,
  input: UpdatePhoneInput,
  now: string,
): Promise<void> {
  await db
    .updateTable('phantom_phones')
    .set({
      ...(input.phone !== undefined && { phone: input.phone }),
      ...(input.contactName !== undefined && { contact_name: input.contactName }),
      ...(input.isPrimary === false && { is_primary: 0 }),
      updated_at: now,
    })
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .where('id', '=', input.id)
    .execute();
}

export async function updateLocation(
  db: Db,
  businessId: string,
  phantomId: string,
  input: UpdateLocationInput,
  now: string,
): Promise<void> {
  await db
    .updateTable('phantom_locations')
    .set({ ...locationValues(input), updated_at: now })
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .where('id', '=', input.id)
    .execute();
}

export interface PrimaryCandidate {
  id: string;
  value: string;
  isPrimary: boolean;
}

export type PrimaryKind = 'email' | 'phone';

export async function listPrimaryCandidates(
  db: Db,
  kind: PrimaryKind,
  businessId: string,
  phantomId: string,
): Promise<PrimaryCandidate[]> {
  const rows =
    kind === 'email'
      ? await db
          .selectFrom('phantom_emails')
          .select(['id', 'email as value', 'is_primary'])
          .where('business_id', '=', businessId)
          .where('phantom_id', '=', phantomId)
          .orderBy('sequence')
          .execute()
      : await db
          .selectFrom('phantom_phones')
          .select(['id', 'phone as value', 'is_primary'])
          .where('business_id', '=', businessId)
          .where('phantom_id', '=', phantomId)
          .orderBy('sequence')
          .execute();
  return rows.map((r) => ({ id: r.id, value: r.value, isPrimary: Boolean(r.is_primary) }));
}

/** Marks exactly `primaryId` (or nothing, when null) as this buyer's primary contact of the kind. */
export async function setPrimaryContact(
  db: Db,
  kind: PrimaryKind,
  businessId: string,
  phantomId: string,
  primaryId: string | null,
  now: string,
): Promise<void> {
  const table = kind === 'email' ? 'phantom_emails' : 'phantom_phones';
  await db
    .updateTable(table)
    .set({ is_primary: 0, updated_at: now })
    .where('business_id', '=', businessId)
    .where('phantom_id', '=', phantomId)
    .where('is_primary', '=', 1)
    .$if(primaryId !== null, (q) => q.where('id', '!=', primaryId!))
    .execute();
  if (primaryId !== null) {
    await db
      .updateTable(table)
      .set({ is_primary: 1, updated_at: now })
      .where('business_id', '=', businessId)
      .where('phantom_id', '=', phantomId)
      .where('id', '=', primaryId)
      .execute();
  }
}
