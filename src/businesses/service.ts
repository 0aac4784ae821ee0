import { createdEvent, namedEvent, updatedEvent } from '../log/events.ts';
import { newId } from '../lib/ids.ts';
import { SYSTEM, type Actor, type WriteContext, type WriteRunner } from '../write/runner.ts';
import {
  expireApiKey,
  insertApiKey,
  insertBusiness,
  listApiKeys,
  revokeApiKey as revokeKey,
  setAllowedCidrs,
  type CreatedBusiness,
  type CreatedKey,
  type KeyDetails,
} from './repository.ts';

/** The key as its events show it (as `key list` does): never the key itself. */
async function keyObject(ctx: WriteContext, keyId: string) {
  const [key] = await listApiKeys(ctx.trx, ctx.businessId, keyId);
  return key;
}

/** A business, with its default item list and first API key, under the id of the context. */
export async function createBusiness(ctx: WriteContext, name: string): Promise<CreatedBusiness> {
  const created = await insertBusiness(ctx.trx, ctx.businessId, name, ctx.now);
  ctx.emit(createdEvent('api_key', await keyObject(ctx, created.keyId)));
  return created;
}

/**
 * Opens a new business as the service itself (CLI, first start, demo): a write runs in a
 * business's scope, so the new business's id is chosen before its first write.
 */
export function openBusiness(writes: WriteRunner, name: string, actor: Actor = SYSTEM): Promise<CreatedBusiness> {
  return writes.run({ businessId: newId('bus'), actor }, (ctx) => createBusiness(ctx, name));
}

/** A new key, made by the context's actor, with an optional name and expiry (the console). */
export async function createApiKey(
  ctx: WriteContext,
  options: Omit<KeyDetails, 'createdBy'> = {},
): Promise<CreatedKey> {
  const created = await insertApiKey(ctx.trx, ctx.businessId, ctx.now, { ...options, createdBy: ctx.actor });
  ctx.emit(createdEvent('api_key', await keyObject(ctx, created.keyId)));
  return created;
}

/**
 * Rotation: a new key with the old one's name, scopes and expiry, and the old key set to expire
 * after `graceSeconds` (0: now), so clients can move to the new key before the old one stops
 * working; never later than it would have anyway.
 */
export async function rotateApiKey(ctx: WriteContext, keyId: string, graceSeconds: number): Promise<CreatedKey | null> {
  const before = await keyObject(ctx, keyId);
  if (!before || before.revokedAt !== null || (before.expiresAt !== null && before.expiresAt <= ctx.now)) return null;
  // The new key keeps what the old one could do, and until when.
  const created = await createApiKey(ctx, {
    name: before.name,
    scopes: before.scopes,
    expiresAt: before.expiresAt,
    allowedCidrs: before.allowedCidrs,
  });
  const graceEnds = new Date(new Date(ctx.now).getTime() + graceSeconds * 1000).toISOString();
  await expireApiKey(
    ctx.trx,
    ctx.businessId,
    keyId,
    before.expiresAt !== null && before.expiresAt < graceEnds ? before.expiresAt : graceEnds,
  );
  ctx.emit(updatedEvent('api_key', before, await keyObject(ctx, keyId)));
  return created;
}

/**
 * Sets the addresses a live key may be used from (null: anywhere); every instance holds it within
 * 5 s, as a revocation. False when the business has no such live key.
 */
export async function setKeyAllowlist(ctx: WriteContext, keyId: string, cidrs: string[] | null): Promise<boolean> {
  const before = await keyObject(ctx, keyId);
  if (!before || !(await setAllowedCidrs(ctx.trx, ctx.businessId, keyId, cidrs))) return false;
  ctx.emit(updatedEvent('api_key', before, await keyObject(ctx, keyId)));
  return true;
}

/** False when the business has no such key; revoking twice keeps the first time and records one event. */
export async function revokeApiKey(ctx: WriteContext, keyId: string): Promise<boolean> {
  const before = await keyObject(ctx, keyId);
  if (!before) return false;
  await revokeKey(ctx.trx, ctx.businessId, keyId, ctx.now);
  if (before.revokedAt === null) ctx.emit(namedEvent('api_key', 'revoked', await keyObject(ctx, keyId)));
  return true;
}
