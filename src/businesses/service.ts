import { newId } from '../lib/ids.ts';
import { SYSTEM, type WriteContext, type WriteRunner } from '../write/runner.ts';
import { insertApiKey, insertBusiness, revokeApiKey as revokeKey, type CreatedBusiness, type CreatedKey } from './repository.ts';

/** A business, with its default item list and first API key, under the id of the context. */
export function createBusiness(ctx: WriteContext, name: string): Promise<CreatedBusiness> {
  return insertBusiness(ctx.trx, ctx.businessId, name, ctx.now);
}

/**
 * Opens a new business as the service itself (CLI, first start, demo): a write runs in a
 * business's scope, so the new business's id is chosen before its first write.
 */
export function openBusiness(writes: WriteRunner, name: string): Promise<CreatedBusiness> {
  return writes.run({ businessId: newId('bus'), actor: SYSTEM }, (ctx) => createBusiness(ctx, name));
}

export function createApiKey(ctx: WriteContext): Promise<CreatedKey> {
  return insertApiKey(ctx.trx, ctx.businessId, ctx.now);
}

/** False when the business has no such key; revoking twice keeps the first time. */
export function revokeApiKey(ctx: WriteContext, keyId: string): Promise<boolean> {
  return revokeKey(ctx.trx, ctx.businessId, keyId, ctx.now);
}
