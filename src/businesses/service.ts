import { createdEvent, namedEvent, updatedEvent } from '../log/events.ts';
import { newId } from '../lib/ids.ts';
import { conflict } from '../lib/errors.ts';
import { SYSTEM, type Actor, type WriteContext, type WriteRunner } from '../write/runner.ts';
import {
  retireRotatedKey,
  successorOf,
  insertApiKey,
  insertBusiness,
  listApiKeys,
  revokeApiKey as revokeKey,
  setAllowedCidrs,
  type CreatedBusiness,
  type CreatedKey,
  type KeyDetails,
} from './repository.ts';

/** Never the key itself. */
async function keyObject(ctx: WriteContext, keyId: string) {
  const [key] = await listApiKeys(ctx.trx, ctx.businessId, keyId);
  return key;
}

export async function createBusiness(ctx: WriteContext, name: string): Promise<CreatedBusiness> {
  const created = await insertBusiness(ctx.trx, ctx.businessId, name, ctx.now);
  ctx.emit(createdEvent('api_key', await keyObject(ctx, created.keyId)));
  return created;
}

/** Opens a business as the service (CLI, first start, demo); its id is chosen before its first write. */
export function openBusiness(writes: WriteRunner, name: string, actor: Actor = SYSTEM): Promise<CreatedBusiness> {
  return writes.run({ businessId: newId('bus'), actor }, (ctx) => createBusiness(ctx, name));
}

export async function createApiKey(
  ctx: WriteContext,
  options: Omit<KeyDetails, 'createdBy'> = {},
): Promise<CreatedKey> {
  const created = await insertApiKey(ctx.trx, ctx.businessId, ctx.now, { ...options, createdBy: ctx.actor });
  ctx.emit(createdEvent('api_key', await keyObject(ctx, created.keyId)));
  return created;
}

/**
 * Rotation: a new key with the old one's name, scopes and expiry; the old one expires after
 * `graceSeconds` (0: now), never later than it would have.
 */
export async function rotateApiKey(ctx: WriteContext, keyId: string, graceSeconds: number): Promise<CreatedKey | null> {
  const before = await keyObject(ctx, keyId);
  if (!before || before.revokedAt !== null || (before.expiresAt !== null && before.expiresAt <= ctx.now)) return null;
  // Rotated once already, its expiry is its grace's end: a second successor would inherit that.
  const rotated = await successorOf(ctx.trx, ctx.businessId, keyId);
  if (rotated) throw conflict(`This key was already rotated: rotate its successor (${rotated}) instead`);
  const created = await createApiKey(ctx, {
    name: before.name,
    scopes: before.scopes,
    expiresAt: before.expiresAt,
    allowedCidrs: before.allowedCidrs,
  });
  const graceEnds = new Date(new Date(ctx.now).getTime() + graceSeconds * 1000).toISOString();
  // Never later than the key would have expired anyway.
  const until = before.expiresAt !== null && before.expiresAt < graceEnds ? before.expiresAt : graceEnds;
  if (!(await retireRotatedKey(ctx.trx, ctx.businessId, keyId, created.keyId, until)))
    throw conflict('This key was rotated meanwhile: rotate its successor instead');
  ctx.emit(updatedEvent('api_key', before, await keyObject(ctx, keyId)));
  return created;
}

/** Null: anywhere. Every instance applies it as soon as a revocation. False when there is no such live key. */
export async function setKeyAllowlist(ctx: WriteContext, keyId: string, cidrs: string[] | null): Promise<boolean> {
  const before = await keyObject(ctx, keyId);
  if (!before || !(await setAllowedCidrs(ctx.trx, ctx.businessId, keyId, cidrs))) return false;
  ctx.emit(updatedEvent('api_key', before, await keyObject(ctx, keyId)));
  return true;
}

/** False when there is no such key; revoking twice keeps the first time and one event. */
export async function revokeApiKey(ctx: WriteContext, keyId: string): Promise<boolean> {
  const before = await keyObject(ctx, keyId);
  if (!before) return false;
  await revokeKey(ctx.trx, ctx.businessId, keyId, ctx.now);
  if (before.revokedAt === null) ctx.emit(namedEvent('api_key', 'revoked', await keyObject(ctx, keyId)));
  return true;
}
