import { timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import {
  businessKeyMode,
  findActiveKeys,
  findBusiness,
  findKeyByHash,
  hashApiKey,
  touchApiKey,
} from '../businesses/repository.ts';
import type { Db } from '../db/types.ts';
import {
  ApiError,
  badRequest,
  forbidden,
  LIVE_KEY_ON_SANDBOX_HINT,
  MALFORMED_KEY_HINT,
  TEST_KEY_ON_LIVE_HINT,
  RATE_LIMITED_MESSAGE,
  unauthorized,
} from '../lib/errors.ts';
import { displayPrefix, keyFormat, keyMode, type KeyMode } from '../businesses/key-format.ts';
import type { FastifyRequest } from 'fastify';
import type { Refusal } from '../log/audit.ts';
import { readJson } from '../lib/json.ts';
import { allows, requiredScopes, type Scope } from '../businesses/scopes.ts';
import { jsonWithoutMargin, marginFieldIn } from '../businesses/margin.ts';
import { addressAllowed } from '../businesses/allowlist.ts';
import { NUL_MESSAGE } from './json-body.ts';
import { checkQueryEncoding } from './query-encoding.ts';
import { rateLimitHeaders, type BucketSettings, type RateLimiter } from './rate-limit.ts';

const MAX_HEADER_LENGTH = 256;
/** How precisely a key's `last_used_at` is kept. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** A valid, live key: id, display prefix, scopes (null: all) and CIDRs it may be used from (null: any). */
export interface VerifiedKey {
  id: string;
  prefix: string;
  scopes: Scope[] | null;
  allowedCidrs: string[] | null;
  /** `test`: a sandbox's key (src/sandbox). */
  mode: KeyMode;
}

export interface Authenticator {
  verify(businessId: unknown, apiKey: unknown): Promise<VerifiedKey | null>;
  /**
   * Why a refused key that is real was refused, when it is the other mode's: a sandbox's test key on
   * its live business, or the live business's key on its sandbox. Null otherwise, so a stranger, or
   * another business's key, learns nothing of a business.
   */
  wrongModeHint(businessId: unknown, apiKey: unknown): Promise<string | null>;
}

/** Verifies `X-Business-Id` + `X-API-Key`; successes are cached for `cacheMs`, short enough for revocations. */
export function createAuthenticator(db: Db, cacheMs: number, clock: () => number = Date.now): Authenticator {
  const cache = new Map<string, { key: VerifiedKey; until: number }>();

  /** Bookkeeping: written at most once a minute per key, and never allowed to fail a request. */
  const recordUse = async (keyId: string, lastUsedAt: unknown, now: number) => {
    const last = lastUsedAt ? new Date(String(lastUsedAt)).getTime() : 0;
    if (now - last < LAST_USED_RESOLUTION_MS) return;
    await touchApiKey(db, keyId, new Date(now).toISOString()).catch(() => {});
  };

  return {
    async verify(businessId, apiKey) {
      if (typeof businessId !== 'string' || typeof apiKey !== 'string') return null;
      if (
        businessId.length === 0 ||
        businessId.length > MAX_HEADER_LENGTH ||
        apiKey.length === 0 ||
        apiKey.length > MAX_HEADER_LENGTH
      )
        return null;
      // A key that cannot be one (bad checksum) costs no lookup.
      if (keyFormat(apiKey) === 'malformed') return null;
      const presented = hashApiKey(apiKey);
      const slot = `${businessId}\u0000${presented}`;
      const now = clock();
      const cached = cache.get(slot);
      if (cached && cached.until > now) return cached.key;

      const expected = Buffer.from(presented, 'hex');
      let match: {
        id: string;
        prefix: string;
        last_used_at: unknown;
        expires_at: unknown;
        scopes: string | null;
        allowed_cidrs: string | null;
      } | null = null;
      for (const key of await findActiveKeys(db, businessId, new Date(now).toISOString())) {
        // Every live key is compared in constant time, so timing does not tell which matched.
        if (timingSafeEqual(Buffer.from(key.key_hash, 'hex'), expected)) match = key;
      }
      // Keys are made in their business's mode; a key of the other mode is refused all the same.
      if (match === null || keyMode(apiKey) !== (await businessKeyMode(db, businessId))) {
        cache.delete(slot);
        return null;
      }
      if (cache.size > 10_000) cache.clear();
      // An expiring key (a rotation's grace) is cached no longer than it lives.
      const expires = match.expires_at ? new Date(String(match.expires_at)).getTime() : Infinity;
      const key = {
        id: match.id,
        prefix: match.prefix,
        scopes: readJson<Scope[]>(match.scopes),
        allowedCidrs: readJson<string[]>(match.allowed_cidrs),
        mode: keyMode(apiKey),
      };
      cache.set(slot, { key, until: Math.min(now + cacheMs, expires) });
      await recordUse(match.id, match.last_used_at, now);
      return key;
    },

    async wrongModeHint(businessId, apiKey) {
      if (typeof businessId !== 'string' || typeof apiKey !== 'string' || businessId.length > MAX_HEADER_LENGTH)
        return null;
      if (keyFormat(apiKey) !== 'current') return null;
      const owner = await findKeyByHash(db, hashApiKey(apiKey));
      if (!owner || owner.business_id === businessId) return null;
      // Only between a sandbox and its own live business: of any other, a key's holder learns nothing.
      const [keys, asked] = await Promise.all([findBusiness(db, owner.business_id), findBusiness(db, businessId)]);
      const linked = keys?.live_business_id === businessId || asked?.live_business_id === owner.business_id;
      if (!asked || !linked) return null;
      const presented = keyMode(apiKey);
      if (presented === (await businessKeyMode(db, businessId))) return null;
      return presented === 'test' ? TEST_KEY_ON_LIVE_HINT : LIVE_KEY_ON_SANDBOX_HINT;
    },
  };
}

export interface ApiGuardOptions {
  authenticator: Authenticator;
  refused?: (refusal: Refusal) => void;
  rateLimiter: RateLimiter | null;
  bucket: BucketSettings;
}

/**
 * API-key authentication and rate limiting in the `/api/v1` scope, so they run for every route under
 * it (and its 404s) however the path was spelled (`/%61pi/v1/...`): the router decides, not the raw URL.
 */
export const apiKeyAuth = fp<ApiGuardOptions>(
  async (api, options) => {
    const { authenticator, rateLimiter, bucket, refused } = options;

    const refuse = (
      request: FastifyRequest,
      error: ApiError,
      reason: string,
      keyId: string | null = null,
    ): ApiError => {
      const businessId = request.headers['x-business-id'];
      const presented = request.headers['x-api-key'];
      if (refused && typeof businessId === 'string' && businessId.length > 0 && businessId.length <= 64) {
        refused({
          businessId,
          status: error.status as 401 | 403,
          keyId,
          keyPrefix:
            typeof presented === 'string' && presented.length > 0
              ? displayPrefix(presented.slice(0, MAX_HEADER_LENGTH))
              : null,
          address: request.ip,
          requestId: request.id,
          method: request.method,
          path: request.url.split('?')[0],
          reason,
        });
      }
      return error;
    };

    api.addHook('onRequest', async (request, reply) => {
      const businessId = request.headers['x-business-id'];
      // Every answer to a test key says so, its refusals included.
      const presentedKey = request.headers['x-api-key'];
      if (typeof presentedKey === 'string' && keyMode(presentedKey) === 'test')
        reply.header('supplyline-sandbox', 'true');
      const key = await authenticator.verify(businessId, request.headers['x-api-key']);
      // Failed authentication is limited per client address; everything else per business.
      const decision = rateLimiter ? await rateLimiter.take(key ? `bus:${businessId}` : `ip:${request.ip}`) : null;
      if (decision) {
        reply.headers(rateLimitHeaders(decision, bucket));
        if (!decision.allowed) {
          reply.header('retry-after', String(decision.retryAfterSeconds));
          throw new ApiError('RATE_LIMITED', RATE_LIMITED_MESSAGE);
        }
      }
      if (!key) {
        const presented = request.headers['x-api-key'];
        const malformed = typeof presented === 'string' && presented.length > 0 && keyFormat(presented) === 'malformed';
        const reason =
          typeof presented !== 'string' || presented.length === 0
            ? 'No X-API-Key'
            : malformed
              ? 'Malformed key'
              : 'Unknown, revoked or expired key, or a key of another business';
        const wrongMode = malformed ? null : await authenticator.wrongModeHint(businessId, presented);
        throw refuse(
          request,
          unauthorized(malformed ? MALFORMED_KEY_HINT : (wrongMode ?? undefined)),
          wrongMode
            ? `${keyMode(presented as string)} key on a ${wrongMode === TEST_KEY_ON_LIVE_HINT ? 'live business' : 'sandbox'}`
            : reason,
        );
      }
      request.businessId = businessId as string;
      request.apiKeyId = key.id;
      request.livemode = key.mode === 'live';
      // The socket's address, or a trusted proxy's X-Forwarded-For (TRUST_PROXY).
      if (key.allowedCidrs && !addressAllowed(key.allowedCidrs, request.ip)) {
        const message = `This API key may not be used from ${request.ip}`;
        throw refuse(request, forbidden(message), message, key.id);
      }
      // An unknown path is a 404 whatever the key.
      const needed = requiredScopes(request.method, request.routeOptions.url).find((s) => !allows(key.scopes, s));
      if (needed) {
        const message = `This API key lacks the scope ${needed}`;
        throw refuse(request, forbidden(message), message, key.id);
      }
      request.apiKeyScopes = key.scopes;
      request.hidesMargin = !allows(key.scopes, 'margin:read');
      // Checks of what was sent come after who sent it: a stranger learns nothing but 401.
      if (request.url.includes('%00')) throw badRequest(NUL_MESSAGE);
      checkQueryEncoding(request.url);
    });

    // Margin (src/businesses/margin.ts): sent only with margin:write, shown only with margin:read.
    api.addHook('preValidation', (request, _reply, done) => {
      const field = allows(request.apiKeyScopes, 'margin:write') ? undefined : marginFieldIn(request.body);
      if (field) {
        const message = `This API key lacks the scope margin:write (it sent ${field})`;
        throw refuse(request, forbidden(message), message, request.apiKeyId);
      }
      done();
    });
    api.addHook('onSend', (request, reply, payload, done) => {
      if (!request.hidesMargin || !String(reply.getHeader('content-type') ?? '').startsWith('application/json'))
        return done(null, payload);
      if (typeof payload === 'string') return done(null, jsonWithoutMargin(payload));
      done(null, Buffer.isBuffer(payload) ? jsonWithoutMargin(payload.toString('utf8')) : payload);
    });
  },
  { name: 'api-key-auth' },
);
