import { timingSafeEqual } from 'node:crypto';
import { findActiveKeys, hashApiKey, touchApiKey } from '../businesses/repository.ts';
import type { Db } from '../db/types.ts';

const MAX_HEADER_LENGTH = 256;

export interface Authenticator {
  /** The key id when the pair is valid and live, otherwise null. */
  verify(businessId: unknown, apiKey: unknown): Promise<string | null>;
}

/**
 * Verifies `X-Business-Id` + `X-API-Key`. Successful checks are cached for `cacheMs`, which is
 * kept under 5 s so that a revocation reaches every instance within 5 s.
 */
export function createAuthenticator(db: Db, cacheMs: number, clock: () => number = Date.now): Authenticator {
  const cache = new Map<string, { keyId: string; until: number }>();

  return {
    async verify(businessId, apiKey) {
      if (typeof businessId !== 'string' || typeof apiKey !== 'string') return null;
      if (businessId.length === 0 || businessId.length > MAX_HEADER_LENGTH || apiKey.length === 0 || apiKey.length > MAX_HEADER_LENGTH) return null;
      const presented = hashApiKey(apiKey);
      const slot = `${businessId}\u0000${presented}`;
      const now = clock();
      const cached = cache.get(slot);
      if (cached && cached.until > now) return cached.keyId;

      const expected = Buffer.from(presented, 'hex');
      let match: string | null = null;
      for (const key of await findActiveKeys(db, businessId)) {
        // Every live key is compared, in constant time, so timing tells nothing about which one matched.
        if (timingSafeEqual(Buffer.from(key.key_hash, 'hex'), expected)) match = key.id;
      }
      if (match === null) {
        cache.delete(slot);
        return null;
      }
      if (cache.size > 10_000) cache.clear();
      cache.set(slot, { keyId: match, until: now + cacheMs });
      await touchApiKey(db, match);
      return match;
    },
  };
}
