import { changesNothing, endUpdate, unchanged } from '../write/update.ts';
import { requireSomethingToUpdate } from '../lib/patch.ts';
import type { Db } from '../db/types.ts';
import { notFound, validationError } from '../lib/errors.ts';
import {
  deleteContacts,
  findMissingContacts,
  insertEmails,
  insertLocations,
  insertPhones,
  listPrimaryCandidates,
  loadContacts,
  locationValues,
  nextSequence,
  setPrimaryContact,
  updateEmail,
  updateLocation,
  updatePhone,
  type ContactRows,
  type PrimaryCandidate,
  type PrimaryKind,
} from './contact-repository.ts';
import {
  findBuyer,
  findBuyerRow,
  insertBuyer,
  setPrimaryValues,
  updatePartnershipStatus,
  updatePhantom,
} from './repository.ts';
import type { Buyer, CreateBuyerInput, UpdateBuyerInput } from './schema.ts';
import type { Written, WriteContext } from '../write/runner.ts';
import { createdEvent } from '../log/events.ts';
import { mergeStoredProperties } from '../lib/properties.ts';
import { toBuyer, type BuyerRow } from './mapper.ts';

export const BUYER_NOT_FOUND = 'Buyer not found';
export const PARTNERSHIP_AS_BUYER_HINT =
  "This is a partnership's id (prt_…): a buyer's routes take the buyer's id (phm_…), as GET /api/v1/buyers shows it";

export interface PrimaryRequest {
  /** The contact this request marked `isPrimary: true`, if any. */
  chosenId?: string;
  /** The buyer's `primaryEmail`/`primaryPhone` as sent: undefined when not sent, null to clear. */
  requested?: string | null;
  /** Field path for the error when the two disagree, e.g. `buyer.primaryEmail`. */
  field: string;
}

export interface PrimaryOutcome {
  primaryId: string | null;
  value: string | null;
  /** A primary value that matches no contact yet: it becomes a new primary contact. */
  createValue?: string;
}

const sameContact = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Keeps the buyer's primary field equal to the contact marked primary (or both empty): an explicit
 * `isPrimary` wins, else the buyer's field picks (or adds) the matching contact, else nothing changes.
 */
export function choosePrimary(contacts: PrimaryCandidate[], request: PrimaryRequest): PrimaryOutcome {
  const chosen = request.chosenId === undefined ? undefined : contacts.find((c) => c.id === request.chosenId);
  if (chosen) {
    if (
      request.requested !== undefined &&
      (request.requested === null || !sameContact(request.requested, chosen.value))
    ) {
      throw validationError({ [request.field]: 'Must match the contact marked isPrimary' });
    }
    return { primaryId: chosen.id, value: chosen.value };
  }
  if (request.requested === null) return { primaryId: null, value: null };
  if (request.requested !== undefined) {
    const match = contacts.find((c) => sameContact(c.value, request.requested!));
    return match
      ? { primaryId: match.id, value: match.value }
      : { primaryId: null, value: request.requested, createValue: request.requested };
  }
  const current = contacts.find((c) => c.isPrimary);
  return { primaryId: current?.id ?? null, value: current?.value ?? null };
}

/** At most one contact of a kind may be marked primary in one request. */
function checkOnePrimary(groups: Array<[string, Array<{ isPrimary?: boolean }> | undefined]>): void {
  let seen = false;
  for (const [path, list] of groups) {
    for (const [i, contact] of (list ?? []).entries()) {
      if (!contact.isPrimary) continue;
      if (seen) throw validationError({ [`${path}.${i}.isPrimary`]: 'At most one contact can be primary' });
      seen = true;
    }
  }
}

async function settlePrimary(
  db: Db,
  kind: PrimaryKind,
  businessId: string,
  phantomId: string,
  request: PrimaryRequest,
  now: string,
): Promise<string | null> {
  const outcome = choosePrimary(await listPrimaryCandidates(db, kind, businessId, phantomId), request);
  let primaryId = outcome.primaryId;
  if (outcome.createValue !== undefined) {
    const sequence = await nextSequence(
      db,
      kind === 'email' ? 'phantom_emails' : 'phantom_phones',
      businessId,
      phantomId,
    );
    const [row] =
      kind === 'email'
        ? await insertEmails(db, businessId, phantomId, [{ email: outcome.createValue }], sequence, now)
        : await insertPhones(db, businessId, phantomId, [{ phone: outcome.createValue }], sequence, now);
    primaryId = row.id;
  }
  await setPrimaryContact(db, kind, businessId, phantomId, primaryId, now);
  return outcome.value;
}

export async function createBuyer(
  ctx: WriteContext,
  input: CreateBuyerInput,
): Promise<Written<Buyer> & { partnershipId: string }> {
  const { trx: db, businessId, now } = ctx;
  checkOnePrimary([['emails', input.emails]]);
  checkOnePrimary([['phones', input.phones]]);
  const created = await insertBuyer(db, businessId, input, now);
  const id = created.phantomId;
  const emails = await insertEmails(db, businessId, id, input.emails ?? [], 1, now);
  const phones = await insertPhones(db, businessId, id, input.phones ?? [], 1, now);
  await insertLocations(db, businessId, id, input.locations ?? [], 1, now);
  const chosenEmail = emails[(input.emails ?? []).findIndex((e) => e.isPrimary)]?.id;
  const chosenPhone = phones[(input.phones ?? []).findIndex((p) => p.isPrimary)]?.id;
  await setPrimaryValues(db, businessId, id, {
    primary_email: await settlePrimary(
      db,
      'email',
      businessId,
      id,
      { chosenId: chosenEmail, requested: input.buyer.primaryEmail, field: 'buyer.primaryEmail' },
      now,
    ),
    primary_phone: await settlePrimary(
      db,
      'phone',
      businessId,
      id,
      { chosenId: chosenPhone, requested: input.buyer.primaryPhone, field: 'buyer.primaryPhone' },
      now,
    ),
  });
  const resource = (await findBuyer(db, businessId, id))!;
  ctx.emit(createdEvent('buyer', resource));
  return { resource, before: null, partnershipId: created.partnershipId };
}

async function checkContactIds(db: Db, businessId: string, phantomId: string, input: UpdateBuyerInput): Promise<void> {
  const checks = [
    ['phantom_emails', 'email', [...(input.updateEmails ?? []).map((c) => c.id), ...(input.deleteEmails ?? [])]],
    ['phantom_phones', 'phone', [...(input.updatePhones ?? []).map((c) => c.id), ...(input.deletePhones ?? [])]],
    [
      'phantom_locations',
      'location',
      [...(input.updateLocations ?? []).map((c) => c.id), ...(input.deleteLocations ?? [])],
    ],
  ] as const;
  for (const [table, noun, ids] of checks) {
    const missing = await findMissingContacts(db, table, businessId, phantomId, ids);
    if (missing.length > 0) throw notFound(`Buyer ${noun}(s) not found: ${missing.join(', ')}`);
  }
}

/** One kind's primary as the PATCH leaves it, where it creates no contact: undefined when it would add one. */
function plannedPrimary<T extends { id: string; is_primary: number | boolean }>(
  rows: T[],
  contactOf: (row: T) => string,
  request: PrimaryRequest,
): { rows: T[]; value: string | null } | undefined {
  const candidates = rows.map((r) => ({ id: r.id, value: contactOf(r), isPrimary: Boolean(r.is_primary) }));
  const outcome = choosePrimary(candidates, request);
  if (outcome.createValue !== undefined) return undefined;
  return { rows: rows.map((r) => ({ ...r, is_primary: r.id === outcome.primaryId ? 1 : 0 })), value: outcome.value };
}

/** Contact rows with a PATCH's updates of them applied, several of one contact in the order sent. */
function withUpdates<R extends { id: string }, U extends { id: string }>(
  rows: R[],
  updates: U[] | undefined,
  set: (update: U) => Partial<R>,
): R[] {
  return rows.map((row) => {
    let next = row;
    for (const u of updates ?? []) if (u.id === row.id) next = { ...next, ...set(u) };
    return next;
  });
}

/** The buyer as a PATCH that creates and deletes nothing would leave it (patchBuyer's writes), or undefined. */
function planned(row: BuyerRow, contacts: ContactRows, input: UpdateBuyerInput): Buyer | undefined {
  const buyer = input.buyer ?? {};
  const emails = withUpdates(contacts.emails, input.updateEmails, (u) => ({
    ...(u.email !== undefined && { email: u.email }),
    ...(u.contactName !== undefined && { contact_name: u.contactName }),
    ...(u.isPrimary === false && { is_primary: 0 }),
  }));
  const phones = withUpdates(contacts.phones, input.updatePhones, (u) => ({
    ...(u.phone !== undefined && { phone: u.phone }),
    ...(u.contactName !== undefined && { contact_name: u.contactName }),
    ...(u.isPrimary === false && { is_primary: 0 }),
  }));
  const locations = withUpdates(contacts.locations, input.updateLocations, locationValues);
  // In the order of the writes: the buyer's own fields, then its primaries.
  const fields = {
    ...(buyer.name !== undefined && { name: buyer.name }),
    ...(buyer.legalName !== undefined && { legal_name: buyer.legalName }),
    ...(buyer.buyerInfo !== undefined && {
      buyer_info:
        buyer.buyerInfo === null ? null : mergeStoredProperties(row.buyer_info, buyer.buyerInfo, 'buyer.buyerInfo'),
    }),
    ...(buyer.properties !== undefined && {
      properties: mergeStoredProperties(row.properties, buyer.properties, 'buyer.properties'),
    }),
    ...(input.partnershipStatus !== undefined && { partnership_status: input.partnershipStatus }),
  };
  const email = plannedPrimary(emails, (r) => r.email, {
    chosenId: input.updateEmails?.find((e) => e.isPrimary)?.id,
    requested: buyer.primaryEmail,
    field: 'buyer.primaryEmail',
  });
  const phone = plannedPrimary(phones, (r) => r.phone, {
    chosenId: input.updatePhones?.find((p) => p.isPrimary)?.id,
    requested: buyer.primaryPhone,
    field: 'buyer.primaryPhone',
  });
  if (!email || !phone) return undefined;
  const phantom: BuyerRow = { ...row, ...fields, primary_email: email.value, primary_phone: phone.value };
  return toBuyer(phantom, { emails: email.rows, phones: phone.rows, locations });
}

export async function patchBuyer(ctx: WriteContext, id: string, input: UpdateBuyerInput): Promise<Written<Buyer>> {
  const { trx: db, businessId, now } = ctx;
  requireSomethingToUpdate(input);
  const row = await findBuyerRow(db, businessId, id);
  if (!row) throw notFound(BUYER_NOT_FOUND);
  const contacts = await loadContacts(db, businessId, [id]);
  const before = toBuyer(row, contacts);
  await checkContactIds(db, businessId, id, input);
  checkOnePrimary([
    ['createEmails', input.createEmails],
    ['updateEmails', input.updateEmails],
  ]);
  checkOnePrimary([
    ['createPhones', input.createPhones],
    ['updatePhones', input.updatePhones],
  ]);

  const buyer = input.buyer ?? {};
  const creates = [input.createEmails, input.createPhones, input.createLocations];
  const deletes = [input.deleteEmails, input.deletePhones, input.deleteLocations];
  if ([...creates, ...deletes].every((list) => !list?.length)) {
    const after = planned(row, contacts, input);
    if (after && changesNothing(before, after)) return unchanged(before);
  }
  await updatePhantom(db, businessId, row, buyer, now);
  if (input.partnershipStatus !== undefined)
    await updatePartnershipStatus(db, businessId, row.partnership_id, input.partnershipStatus, now);

  await deleteContacts(db, 'phantom_emails', businessId, id, input.deleteEmails ?? []);
  await deleteContacts(db, 'phantom_phones', businessId, id, input.deletePhones ?? []);
  await deleteContacts(db, 'phantom_locations', businessId, id, input.deleteLocations ?? []);
  for (const email of input.updateEmails ?? []) await updateEmail(db, businessId, id, email, now);
  for (const phone of input.updatePhones ?? []) await updatePhone(db, businessId, id, phone, now);
  for (const location of input.updateLocations ?? []) await updateLocation(db, businessId, id, location, now);
  const emails = await insertEmails(
    db,
    businessId,
    id,
    input.createEmails ?? [],
    await nextSequence(db, 'phantom_emails', businessId, id),
    now,
  );
  const phones = await insertPhones(
    db,
    businessId,
    id,
    input.createPhones ?? [],
    await nextSequence(db, 'phantom_phones', businessId, id),
    now,
  );
  await insertLocations(
    db,
    businessId,
    id,
    input.createLocations ?? [],
    await nextSequence(db, 'phantom_locations', businessId, id),
    now,
  );

  const chosenEmail =
    emails[(input.createEmails ?? []).findIndex((e) => e.isPrimary)]?.id ??
    input.updateEmails?.find((e) => e.isPrimary)?.id;
  const chosenPhone =
    phones[(input.createPhones ?? []).findIndex((p) => p.isPrimary)]?.id ??
    input.updatePhones?.find((p) => p.isPrimary)?.id;
  await setPrimaryValues(db, businessId, id, {
    primary_email: await settlePrimary(
      db,
      'email',
      businessId,
      id,
      { chosenId: chosenEmail, requested: buyer.primaryEmail, field: 'buyer.primaryEmail' },
      now,
    ),
    primary_phone: await settlePrimary(
      db,
      'phone',
      businessId,
      id,
      { chosenId: chosenPhone, requested: buyer.primaryPhone, field: 'buyer.primaryPhone' },
      now,
    ),
  });
  const resource = (await findBuyer(db, businessId, id))!;
  return endUpdate(ctx, 'buyer', before, resource);
}
