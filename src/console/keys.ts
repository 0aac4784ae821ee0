import type { FastifyInstance, FastifyReply } from 'fastify';
import { listApiKeys } from '../businesses/repository.ts';
import { createApiKey, revokeApiKey, rotateApiKey } from '../businesses/service.ts';
import { AREAS, type Scope } from '../businesses/scopes.ts';
import { parseCidrs } from '../businesses/allowlist.ts';
import { ApiError } from '../lib/errors.ts';
import { GRACE_CHOICES, type ConsoleKit, type Form } from './kit.ts';
import type { SessionUser } from './session.ts';

const EXPIRY_DAYS = new Set([30, 90, 365]);

/** The scope matrix's rows: each area, the margin and the audit trail, with their levels. */
const MATRIX: Array<{ name: string; levels: string[] }> = [
  ...AREAS.map((name) => ({ name, levels: ['write', 'read', 'none'] })),
  { name: 'margin', levels: ['write', 'read', 'none'] },
  { name: 'audit', levels: ['read', 'none'] },
];

/** API keys (owners only): list, create (shown once) with scopes and allowlist, rotate with grace, revoke. */
export function registerKeyPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, actorOf, act, idOf } = kit;
  const { db, writes, clock } = kit.deps;
  const keysPage = async (reply: FastifyReply, user: SessionUser) => {
    const now = new Date(clock()).toISOString();
    const keys = (await listApiKeys(db, user.businessId))
      .map((k) => ({
        ...k,
        status: k.revokedAt ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active',
      }))
      .reverse();
    return page(reply, 'keys.eta', user, {
      title: 'API keys',
      section: 'keys',
      keys,
      businessId: user.businessId,
      matrix: MATRIX,
    });
  };
  const shown = (apiKey: string, note?: string) => ({
    id: 'new-key-value',
    title: 'New key: copy it now',
    value: apiKey,
    note,
  });

  app.get('/console/keys', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    return user ? keysPage(reply, user) : reply;
  });

  app.post('/console/keys', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    return act(reply, user, '/console/keys', async () => {
      const name = String(form.name ?? '').trim();
      if (name.length === 0 || name.length > 100)
        throw new ApiError('VALIDATION_ERROR', 'A key needs a name of 1 to 100 characters.');
      const days = form.expiresInDays ? Number(form.expiresInDays) : null;
      if (days !== null && !EXPIRY_DAYS.has(days))
        throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered expiries.');
      const expiresAt = days === null ? null : new Date(clock() + days * 86_400_000).toISOString();
      const allowed = String(form.allowedFrom ?? '').trim();
      let allowedCidrs: string[] | null = null;
      try {
        allowedCidrs = allowed === '' ? null : parseCidrs(allowed);
      } catch (error) {
        throw new ApiError('VALIDATION_ERROR', `${(error as Error).message}.`);
      }
      const key = await writes.run(actorOf(user), (ctx) =>
        createApiKey(ctx, { name, expiresAt, scopes: scopesOf(form), allowedCidrs }),
      );
      return { notice: `Created the key "${name}".`, secret: shown(key.apiKey) };
    });
  });

  app.post('/console/keys/:id/rotate', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const grace = Number((request.body as Form).graceSeconds);
    return act(reply, user, '/console/keys', async () => {
      if (!GRACE_CHOICES.has(grace)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered grace periods.');
      const keyId = idOf(request);
      const [old] = await listApiKeys(db, user.businessId, keyId);
      const key = old ? await writes.run(actorOf(user), (ctx) => rotateApiKey(ctx, keyId, grace)) : null;
      if (!old || !key) throw new ApiError('NOT_FOUND', 'No such active key.');
      const ends = new Date(clock() + grace * 1000).toISOString().slice(0, 16).replace('T', ' ');
      const replaces =
        grace === 0 ? 'The key it replaces no longer works.' : `The key it replaces keeps working until ${ends} UTC.`;
      return {
        notice: `Rotated the key "${old.name ?? old.prefix}".`,
        secret: shown(key.apiKey, `${replaces} The new key keeps its scopes, allowlist and expiry.`),
      };
    });
  });

  app.get('/console/keys/:id/revoke', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const [key] = await listApiKeys(db, user.businessId, idOf(request));
    if (!key) throw new ApiError('NOT_FOUND', 'No such key.');
    return page(reply, 'confirm.eta', user, {
      title: 'Revoke key',
      section: 'keys',
      heading: `Revoke the key "${key.name ?? key.prefix}"?`,
      action: `/console/keys/${key.id}/revoke`,
      button: 'Revoke',
      cancel: '/console/keys',
      message:
        `Every request made with ${key.prefix}… is refused within 5 seconds, on every instance. ` +
        'This cannot be undone: an integration using it needs a new key.',
    });
  });

  app.post('/console/keys/:id/revoke', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const keyId = idOf(request);
    const [key] = await listApiKeys(db, user.businessId, keyId);
    if (!key || !(await writes.run(actorOf(user), (ctx) => revokeApiKey(ctx, keyId))))
      throw new ApiError('NOT_FOUND', 'No such key.');
    return kit.done(reply, user, '/console/keys', {
      notice: `Revoked the key "${key.name ?? key.prefix}": it is refused within 5 seconds.`,
    });
  });
}

/** Null (every scope) when each row holds its highest level. */
function scopesOf(form: Form): Scope[] | null {
  const levels = MATRIX.map(({ name, levels: offered }) => {
    const level = String(form[`scope.${name}`] ?? offered[0]);
    if (!offered.includes(level))
      throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered levels for each row of the matrix.');
    return { name, level, highest: level === offered[0] };
  });
  if (levels.every((l) => l.highest)) return null;
  const scopes = levels.filter((l) => l.level !== 'none').map((l) => `${l.name}:${l.level}` as Scope);
  if (!levels.some((l) => (AREAS as readonly string[]).includes(l.name) && l.level !== 'none')) {
    throw new ApiError('VALIDATION_ERROR', 'A key that may do nothing is no use: give it at least one area.');
  }
  return scopes;
}
