import { createHash } from 'node:crypto';
import { newId } from '../lib/ids.ts';
import { toIso } from '../lib/time.ts';
import { readJson } from '../lib/json.ts';
import type { Db } from '../db/types.ts';
import type { Scope } from './scopes.ts';
import { displayPrefix, newApiKey, type KeyMode } from './key-format.ts';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface CreatedKey {
  keyId: string;
  apiKey: string;
}

export interface KeyDetails {
  name?: string | null;
  createdBy?: { type: string; id: string; name: string | null } | null;
  expiresAt?: string | null;
  /** None given: every scope. */
  scopes?: Scope[] | null;
  /** None given: anywhere. */
  allowedCidrs?: string[] | null;
}

/** A key is shown once; only its SHA-256 hash is stored. A sandbox's keys are test keys (`sl_test_`). */
export async function insertApiKey(
  db: Db,
  businessId: string,
  now: string,
  details: KeyDetails = {},
): Promise<CreatedKey> {
  const apiKey = newApiKey(await businessKeyMode(db, businessId));
  const keyId = newId('key');
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      business_id: businessId,
      prefix: displayPrefix(apiKey),
      key_hash: hashApiKey(apiKey),
      created_at: now,
      name: details.name ?? null,
      created_by: details.createdBy ? JSON.stringify(details.createdBy) : null,
      expires_at: details.expiresAt ?? null,
      scopes: details.scopes ? JSON.stringify(details.scopes) : null,
      allowed_cidrs: details.allowedCidrs ? JSON.stringify(details.allowedCidrs) : null,
    })
    .execute();
  return { keyId, apiKey };
}

/** Null: anywhere. False when the business has no such live key. */
export async function setAllowedCidrs(
  db: Db,
  businessId: string,
  keyId: string,
  cidrs: string[] | null,
): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ allowed_cidrs: cidrs ? JSON.stringify(cidrs) : null })
    .where('business_id', '=', businessId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A rotation's grace; an earlier expiry is kept. */
/** Marks a key rotated to `successor` and refused from `at`. False when it was rotated already. */
export async function retireRotatedKey(
  db: Db,
  businessId: string,
  keyId: string,
  successor: string,
  at: string,
): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('api_keys')
    .set({ rotated_to: successor, expires_at: at })
    .where('business_id', '=', businessId)
    .where('id', '=', keyId)
    .where('rotated_to', 'is', null)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** The key that replaced a rotated key; null if it was never rotated. */
export async function successorOf(db: Db, businessId: string, keyId: string): Promise<string | null> {
  const row = await db
    .selectFrom('api_keys')
    .select('rotated_to')
    .where('business_id', '=', businessId)
    .where('id', '=', keyId)
    .executeTakeFirst();
  return row?.rotated_to ?? null;
}

export interface CreatedBusiness extends CreatedKey {
  businessId: string;
  defaultItemListId: string;
}

/** With its default item list and a first API key; run inside a transaction. */
export async function insertBusiness(db: Db, businessId: string, name: string, now: string): Promise<CreatedBusiness> {
  await db.insertInto('businesses').values({ id: businessId, name, created_at: now, updated_at: now }).execute();
  const defaultItemListId = newId('list');
  await db
    .insertInto('item_lists')
    .values({
      id: defaultItemListId,
      business_id: businessId,
      label: 'Default Item List',
      status: 'ACTIVE',
      is_default: 1,
      global_price_factor: '1',
      global_cost_factor: '1',
      created_at: now,
      updated_at: now,
    })
    .execute();
  const key = await insertApiKey(db, businessId, now);
  return { businessId, defaultItemListId, ...key };
}

export async function findBusiness(db: Db, businessId: string) {
  return db.selectFrom('businesses').selectAll().where('id', '=', businessId).executeTakeFirst();
}

/** A business is made live or a sandbox and stays so, so the answer is kept (its id is never reused). */
const modes = new Map<string, KeyMode>();

/** `test` for a sandbox (src/sandbox), `live` for a live business or none at all. */
export async function businessKeyMode(db: Db, businessId: string): Promise<KeyMode> {
  const known = modes.get(businessId);
  if (known) return known;
  const row = await db
    .selectFrom('businesses')
    .select('live_business_id')
    .where('id', '=', businessId)
    .executeTakeFirst();
  if (!row) return 'live';
  const mode = row.live_business_id === null ? 'live' : 'test';
  if (modes.size > 10_000) modes.clear();
  modes.set(businessId, mode);
  return mode;
}

/** Events and webhook deliveries say whether they are a live business's (`"livemode": true`). */
export const isLiveBusiness = async (db: Db, businessId: string) => (await businessKeyMode(db, businessId)) === 'live';

/** The business and mode of a key by its hash, whatever business it was presented with; for a refusal's hint only. */
export async function findKeyByHash(db: Db, keyHash: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('businesses', 'businesses.id', 'api_keys.business_id')
    .select(['api_keys.business_id', 'businesses.live_business_id'])
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function countBusinesses(db: Db): Promise<number> {
  const row = await db
    .selectFrom('businesses')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Never the key, nor its hash. */
export async function listApiKeys(db: Db, businessId: string, keyId?: string) {
  const rows = await db
    .selectFrom('api_keys')
    .select([
      'id',
      'prefix',
      'created_at',
      'last_used_at',
      'revoked_at',
      'name',
      'created_by',
      'expires_at',
      'scopes',
      'allowed_cidrs',
    ])
    .where('business_id', '=', businessId)
    .$if(keyId !== undefined, (q) => q.where('id', '=', keyId!))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    prefix: r.prefix,
    createdAt: toIso(r.created_at),
    lastUsedAt: toIso(r.last_used_at),
    revokedAt: toIso(r.revoked_at),
    name: r.name,
    createdBy: readJson<{ type: string; id: string; name: string | null }>(r.created_by),
    expiresAt: toIso(r.expires_at),
    scopes: readJson<Scope[]>(r.scopes),
    allowedCidrs: readJson<string[]>(r.allowed_cidrs),
  }));
}

export async function findKeyBusiness(db: Db, keyId: string): Promise<string | undefined> {
  return (await db.selectFrom('api_keys').select('business_id').where('id', '=', keyId).executeTakeFirst())
    ?.business_id;
}

/** False when the business has no such key; revoking twice keeps the first time. */
export async function revokeApiKey(db: Db, businessId: string, keyId: string, now: string): Promise<boolean> {
  const key = await db
    .selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('business_id', '=', businessId)
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (!key) return false;
  if (key.revoked_at === null)
    await db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', keyId).execute();
  return true;
}

export async function findActiveKeys(db: Db, businessId: string, now = new Date(0).toISOString()) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'prefix', 'key_hash', 'last_used_at', 'expires_at', 'scopes', 'allowed_cidrs'])
    .where('business_id', '=', businessId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .execute();
}

/** Bookkeeping outside any transaction, at most once a minute per key, never failing a request. */
export async function touchApiKey(db: Db, keyId: string, at: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
}

/** 0 before first use; takes no lock. */
export async function findCounterValue(db: Db, businessId: string, name: string): Promise<number> {
  const row = await db
    .selectFrom('business_counters')
    .select('value')
    .where('business_id', '=', businessId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(row?.value ?? 0);
}
