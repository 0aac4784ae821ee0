import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { listApiKeys } from '../businesses/repository.ts';
import { createApiKey, revokeApiKey, rotateApiKey } from '../businesses/service.ts';
import type { Database } from '../db/types.ts';
import { MemoryRateLimiter } from '../http/rate-limit.ts';
import { ApiError } from '../lib/errors.ts';
import { verifyPassword } from '../users/password.ts';
import { findUserByEmail, listUsers } from '../users/repository.ts';
import { createUser, updateUser } from '../users/service.ts';
import type { Role } from '../users/table.ts';
import type { WriteRunner } from '../write/runner.ts';
import { lastSequence } from '../events/log.ts';
import { listLatestEvents } from '../events/repository.ts';
import { RESOURCE_TYPES } from '../events/schema.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import { toIso } from '../lib/time.ts';
import { listOrders } from '../orders/list-repository.ts';
import { findOrder, findOrderRows } from '../orders/repository.ts';
import { ORDER_PHASES, ORDER_STATUSES } from '../orders/schema.ts';
import { toEndpoint } from '../webhooks/mapper.ts';
import { findEndpointRow, listDeliveries, listEndpoints } from '../webhooks/repository.ts';
import { DELIVERY_STATUSES } from '../webhooks/schema.ts';
import { createEndpoint, replayRange, rotateSecret, sendTestEvent, updateEndpoint, type WebhookSettings } from '../webhooks/service.ts';
import type { DeliveryStatus } from '../webhooks/table.ts';
import {
  ABSOLUTE_MS, checkCsrf, cookieValue, createSession, csrfTokenOf, endAllSessions, endSession, readSession, SESSION_COOKIE, type SessionUser,
} from './session.ts';

export interface ConsoleDeps {
  db: Kysely<Database>;
  writes: WriteRunner;
  clock: () => number;
  /** CONSOLE_COOKIE_SECURE: the session cookie is sent over https only. */
  secureCookie: boolean;
  /** The webhook services' settings, and the worker's nudge after a test event or replay. */
  webhooks: WebhookSettings;
  kickWebhooks: () => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    consoleUser: SessionUser | null;
  }
}

/** Where the console's files are: beside this module (tsx), or in src/ beside dist/ (the bundle `npm start` runs). */
function consoleDir(name: string): string {
  const here = join(import.meta.dirname, name);
  return existsSync(here) ? here : join(import.meta.dirname, '..', 'src', 'console', name);
}

const ASSETS: Record<string, { type: string; body: () => Buffer }> = (() => {
  const require = createRequire(import.meta.url);
  const file = (path: string) => { let cached: Buffer | undefined; return () => (cached ??= readFileSync(path)); };
  return {
    'htmx.min.js': { type: 'text/javascript; charset=utf-8', body: file(require.resolve('htmx.org/dist/htmx.min.js')) },
    'console.js': { type: 'text/javascript; charset=utf-8', body: file(join(consoleDir('assets'), 'console.js')) },
    'console.css': { type: 'text/css; charset=utf-8', body: file(join(consoleDir('assets'), 'console.css')) },
  };
})();

/** No inline script or style, no framing, forms only to the console itself. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
  + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const EVENT_TYPE = /^(?:\*|[a-z_]{1,32}\.(?:\*|[a-z_]{1,32}))$/;

/** `data.changes` as lines: each field or property path with from and to; child lists as counts. */
function flattenChanges(changes: Record<string, unknown>, prefix = ''): Array<{ path: string; from: string; to: string }> {
  const out: Array<{ path: string; from: string; to: string }> = [];
  const show = (v: unknown) => (v === undefined ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v));
  for (const [key, value] of Object.entries(changes)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const change = value as Record<string, unknown>;
    if (change && typeof change === 'object' && ('from' in change || 'to' in change)) out.push({ path, from: show(change.from), to: show(change.to) });
    else if (change && typeof change === 'object' && ('created' in change || 'updated' in change || 'deleted' in change)) {
      const count = (k: string) => (Array.isArray(change[k]) ? (change[k] as unknown[]).length : 0);
      out.push({ path, from: '', to: `${count('created')} created, ${count('updated')} updated, ${count('deleted')} deleted` });
    } else if (change && typeof change === 'object') out.push(...flattenChanges(change, path));
  }
  return out;
}

/** The events feed shows only the resources of pages a role may open: viewers never see keys, webhooks or the team. */
const HIDDEN_FROM: Record<Role, string[]> = { owner: [], admin: ['user'], viewer: ['api_key', 'webhook_endpoint', 'user'] };

const GRACE_CHOICES = new Set([0, 3600, 86_400, 604_800]);
const EXPIRY_DAYS = new Set([30, 90, 365]);
const FORM_LIMIT = 16 * 1024;

class Forbidden extends Error {}

/** A request a browser says came from another site (Sec-Fetch-Site), or whose Origin is not this host. */
function isCrossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

type Form = Record<string, string>;

/**
 * The supplier console at /console: server-rendered pages, forms that work without script, htmx
 * where present. Its own scope: session-cookie authentication (the API's key check never runs
 * here, and a session never opens the API), a form-body parser, and security headers. Handlers
 * call the same services as the API through the write runner, as the signed-in user.
 */
export async function consoleRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const { db, writes, clock } = deps;
  // Sign-in attempts: 5 a minute per account and 20 a minute per address (per instance).
  const perAccount = new MemoryRateLimiter({ ratePerSecond: 5 / 60, burst: 5 }, clock);
  const perAddress = new MemoryRateLimiter({ ratePerSecond: 20 / 60, burst: 20 }, clock);

  // Pages, not API operations: none of them is in /openapi.json.
  app.addHook('onRoute', (route) => { route.schema = { ...route.schema, hide: true }; });
  await app.register(view, { engine: { eta: new Eta({ autoEscape: true }) }, templates: consoleDir('views'), layout: 'layout.eta', production: true });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_request, body, done) => {
    const form: Form = {};
    for (const [key, value] of new URLSearchParams(String(body))) form[key] = value;
    done(null, form);
  });

  app.decorateRequest('consoleUser', null);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('content-security-policy', CSP).header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin').header('cache-control', 'no-store');
    request.consoleUser = await readSession(db, cookieValue(request.headers.cookie, SESSION_COOKIE), clock());
  });
  // Every state-changing form carries the session's CSRF token; and no form is taken from another
  // site, which also covers sign-in (no session yet, so no token): a page elsewhere cannot sign a
  // visitor into an account of its choosing.
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const user = request.consoleUser;
    const form = (request.body ?? {}) as Form;
    const signingIn = request.url.split('?')[0] === '/console/sign-in';
    if (isCrossSite(request) || (!signingIn && (!user || !checkCsrf(user.token, form.csrf)))) {
      return reply.code(403).type('text/html; charset=utf-8')
        .view('message.eta', { title: 'Refused', user, csrf: user ? csrfTokenOf(user.token) : '', heading: 'Refused', message: 'This form has expired or did not come from the console. Reload the page and try again.' });
    }
  });
  app.setErrorHandler(async (error, request, reply) => {
    const user = request.consoleUser;
    const status = error instanceof Forbidden ? 403 : error instanceof ApiError ? error.status : (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'console error');
    const message = error instanceof Forbidden ? 'Your role does not allow this page.'
      : status < 500 ? (error as Error).message : 'Something went wrong; it has been logged.';
    return reply.code(status).type('text/html; charset=utf-8')
      .view('message.eta', { title: 'Error', user, csrf: user ? csrfTokenOf(user.token) : '', heading: status === 403 ? 'Not allowed' : 'Something is wrong', message });
  });

  const page = (reply: FastifyReply, template: string, user: SessionUser | null, data: Record<string, unknown>) =>
    reply.type('text/html; charset=utf-8').view(template, { user, csrf: user ? csrfTokenOf(user.token) : '', ...data });

  const signedIn = (request: FastifyRequest, reply: FastifyReply, roles: Role[] = ['owner', 'admin', 'viewer']): SessionUser | null => {
    const user = request.consoleUser;
    if (!user) {
      void reply.redirect('/console/sign-in', 303);
      return null;
    }
    if (!roles.includes(user.role)) throw new Forbidden();
    return user;
  };
  const actorOf = (user: SessionUser) => ({ businessId: user.businessId, actor: { type: 'user' as const, id: user.id, name: user.name } });
  const cookie = (value: string, maxAgeSeconds: number) =>
    `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${deps.secureCookie ? '; Secure' : ''}`;

  app.get('/console/assets/:name', async (request, reply) => {
    const asset = ASSETS[(request.params as { name: string }).name];
    if (!asset) return reply.code(404).type('text/plain').send('Not found');
    return reply.type(asset.type).header('cache-control', 'public, max-age=3600').send(asset.body());
  });

  app.get('/console', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    return reply.redirect(user.role === 'viewer' ? '/console/orders' : '/console/keys', 303);
  });

  app.get('/console/sign-in', async (request, reply) => {
    if (request.consoleUser) return reply.redirect('/console', 303);
    return page(reply, 'sign-in.eta', null, { title: 'Sign in' });
  });

  app.post('/console/sign-in', async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const email = String(form.email ?? '').trim().toLowerCase().slice(0, 320);
    const [account, address] = await Promise.all([perAccount.take(email), perAddress.take(request.ip)]);
    if (!account.allowed || !address.allowed) {
      reply.header('retry-after', String(Math.max(account.retryAfterSeconds, address.retryAfterSeconds)));
      return page(reply.code(429), 'sign-in.eta', null, { title: 'Sign in', email, error: 'Too many attempts. Wait a minute, then try again.' });
    }
    const user = email ? await findUserByEmail(db, email) : undefined;
    // A missing user costs a hash too, so the answer's timing does not say which emails exist.
    const ok = await verifyPassword(String(form.password ?? '').slice(0, 200), user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok || user.status !== 'active') {
      return page(reply.code(401), 'sign-in.eta', null, { title: 'Sign in', email, error: 'Wrong email or password.' });
    }
    const token = await createSession(db, user, clock());
    reply.header('set-cookie', cookie(token, ABSOLUTE_MS / 1000));
    return reply.redirect('/console', 303);
  });

  app.post('/console/sign-out', async (request, reply) => {
    if (request.consoleUser) await endSession(db, request.consoleUser.token, clock());
    reply.header('set-cookie', cookie('', 0));
    return reply.redirect('/console/sign-in', 303);
  });

  app.post('/console/sign-out-everywhere', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    await endAllSessions(db, user.id, clock());
    reply.header('set-cookie', cookie('', 0));
    return reply.redirect('/console/sign-in', 303);
  });

  const keysPage = async (reply: FastifyReply, user: SessionUser, created?: { apiKey: string; replaces?: string }) => {
    const now = new Date(clock()).toISOString();
    const keys = (await listApiKeys(db, user.businessId)).map((k) => ({
      ...k, status: k.revokedAt ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active',
    })).reverse();
    return page(reply, 'keys.eta', user, { title: 'API keys', section: 'keys', keys, created, businessId: user.businessId });
  };

  app.get('/console/keys', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    return user ? keysPage(reply, user) : reply;
  });

  app.post('/console/keys', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    const name = String(form.name ?? '').trim();
    if (name.length === 0 || name.length > 100) throw new ApiError('VALIDATION_ERROR', 'A key needs a name of 1 to 100 characters.');
    const days = form.expiresInDays ? Number(form.expiresInDays) : null;
    if (days !== null && !EXPIRY_DAYS.has(days)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered expiries.');
    const expiresAt = days === null ? null : new Date(clock() + days * 86_400_000).toISOString();
    const key = await writes.run(actorOf(user), (ctx) => createApiKey(ctx, { name, expiresAt }));
    return keysPage(reply.code(201), user, { apiKey: key.apiKey });
  });

  app.post('/console/keys/:id/rotate', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const grace = Number((request.body as Form).graceSeconds);
    if (!GRACE_CHOICES.has(grace)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered grace periods.');
    const keyId = (request.params as { id: string }).id;
    const key = await writes.run(actorOf(user), (ctx) => rotateApiKey(ctx, keyId, grace));
    if (!key) throw new ApiError('NOT_FOUND', 'No such active key.');
    const replaces = grace === 0 ? 'now' : `at ${new Date(clock() + grace * 1000).toISOString()}`;
    return keysPage(reply.code(201), user, { apiKey: key.apiKey, replaces });
  });

  app.post('/console/keys/:id/revoke', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const keyId = (request.params as { id: string }).id;
    if (!await writes.run(actorOf(user), (ctx) => revokeApiKey(ctx, keyId))) throw new ApiError('NOT_FOUND', 'No such key.');
    return reply.redirect('/console/keys', 303);
  });


  // Webhooks: the same services as the API's /webhook-endpoints, as the signed-in user.
  const typesOf = (raw: unknown): string[] => String(raw ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  const problem = (error: unknown): string => {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    return error.fieldErrors ? Object.entries(error.fieldErrors).map(([k, v]) => `${k}: ${v}`).join('; ') : error.message;
  };
  const checkTypes = (types: string[]) => {
    if (types.length > 100 || !types.every((t) => EVENT_TYPE.test(t))) throw new ApiError('VALIDATION_ERROR', 'Event types look like order.created, order.* or *, separated by commas.');
    return [...new Set(types)];
  };

  const webhooksPage = async (reply: FastifyReply, user: SessionUser, extra: Record<string, unknown> = {}) => {
    const { items } = await listEndpoints(db, user.businessId, 1, 100, new Date(clock()).toISOString());
    return page(reply, 'webhooks.eta', user, { title: 'Webhooks', section: 'webhooks', endpoints: items, canEdit: true, ...extra });
  };

  app.get('/console/webhooks', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    return user ? webhooksPage(reply, user) : reply;
  });

  app.post('/console/webhooks', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const input = { url: String(form.url ?? '').trim().slice(0, 2048), description: form.description ? String(form.description).slice(0, 500) : null, eventTypes: checkTypes(typesOf(form.eventTypes)) };
      const { endpoint, secret } = await writes.run(actorOf(user), (ctx) => createEndpoint(ctx, input, deps.webhooks));
      deps.kickWebhooks();
      return webhooksPage(reply.code(201), user, { created: { url: endpoint.url, secret } });
    } catch (error) {
      return webhooksPage(reply.code(400), user, { error: problem(error) });
    }
  });

  const endpointPage = async (reply: FastifyReply, user: SessionUser, id: string, query: { status?: string; before?: string } = {}, extra: Record<string, unknown> = {}) => {
    const row = await findEndpointRow(db, user.businessId, id);
    if (!row) throw new ApiError('NOT_FOUND', 'No such webhook endpoint.');
    const filter = DELIVERY_STATUSES.includes(query.status as never) ? query.status as DeliveryStatus : undefined;
    const before = query.before && /^whd_[0-9a-z]{1,40}$/.test(query.before) ? query.before : undefined;
    const log = await listDeliveries(db, user.businessId, id, { status: filter, before, newestFirst: true, limit: 50 });
    const last = log.items[log.items.length - 1];
    const older = log.hasMore && last ? `/console/webhooks/${id}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), before: last.id })}` : null;
    return page(reply, 'webhook.eta', user, {
      title: 'Webhook endpoint', section: 'webhooks', endpoint: toEndpoint(row, new Date(clock()).toISOString()),
      deliveries: log.items, status: filter ?? '', older, canEdit: true, ...extra,
    });
  };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  app.get('/console/webhooks/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    return user ? endpointPage(reply, user, idOf(request), request.query as { status?: string; before?: string }) : reply;
  });

  app.post('/console/webhooks/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const status = ['enabled', 'paused', 'disabled'].includes(form.status) ? form.status as 'enabled' : undefined;
      await writes.run(actorOf(user), (ctx) => updateEndpoint(ctx, idOf(request), { eventTypes: checkTypes(typesOf(form.eventTypes)), status }, deps.webhooks));
      deps.kickWebhooks();
      return endpointPage(reply, user, idOf(request), {}, { notice: 'Saved.' });
    } catch (error) {
      return endpointPage(reply.code(400), user, idOf(request), {}, { error: problem(error) });
    }
  });

  app.post('/console/webhooks/:id/test', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    await writes.run(actorOf(user), (ctx) => sendTestEvent(ctx, idOf(request)));
    deps.kickWebhooks();
    return endpointPage(reply, user, idOf(request), {}, { notice: 'A webhook.test event is on its way; it shows in the log below.' });
  });

  app.post('/console/webhooks/:id/rotate', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const grace = Number((request.body as Form).graceSeconds);
    if (!GRACE_CHOICES.has(grace)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered grace periods.');
    const { secret } = await writes.run(actorOf(user), (ctx) => rotateSecret(ctx, idOf(request), grace, deps.webhooks));
    return endpointPage(reply, user, idOf(request), {}, { secret });
  });

  app.post('/console/webhooks/:id/replay', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    const after = Number(form.afterSequence);
    const until = Number(form.untilSequence);
    try {
      if (!Number.isSafeInteger(after) || !Number.isSafeInteger(until) || after < 0) throw new ApiError('VALIDATION_ERROR', 'Sequences are whole numbers.');
      await writes.run(actorOf(user), (ctx) => replayRange(ctx, idOf(request), after, until));
      deps.kickWebhooks();
      return endpointPage(reply, user, idOf(request), {}, { notice: `Replaying events ${after + 1} to ${until}.` });
    } catch (error) {
      return endpointPage(reply.code(400), user, idOf(request), {}, { error: problem(error) });
    }
  });

  // Orders: the API's list with its filters, and an order with its history.
  app.get('/console/orders', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const q = request.query as Record<string, string | undefined>;
    const pageNumber = Math.max(1, Math.min(1_000_000, Number.parseInt(q.page ?? '1', 10) || 1));
    const view = { title: 'Orders', section: 'orders', q, phases: ORDER_PHASES, statuses: ORDER_STATUSES, orders: [] as unknown[], total: 0, page: pageNumber, pages: 0 };
    const link = (n: number) => `/console/orders?${new URLSearchParams({ ...Object.fromEntries(Object.entries(q).filter(([k, v]) => v && k !== 'page')) as Record<string, string>, page: String(n) })}`;
    try {
      const property = readPropertyFilter({
        propertyPath: q.propertyPath || undefined, propertyValue: q.propertyValue || undefined,
        propertyExists: q.propertyExists === 'true' ? true : q.propertyExists === 'false' ? false : undefined,
      });
      if (q.phase && !ORDER_PHASES.includes(q.phase as never)) throw new ApiError('VALIDATION_ERROR', 'Unknown phase.');
      if (q.status && !ORDER_STATUSES.includes(q.status as never)) throw new ApiError('VALIDATION_ERROR', 'Unknown status.');
      if (q.since && !/^\d{4}-\d{2}-\d{2}$/.test(q.since)) throw new ApiError('VALIDATION_ERROR', 'Changed since is a date.');
      const limit = 25;
      const listed = await listOrders(db, user.businessId, {
        page: pageNumber, limit, includeDeleted: false, phase: q.phase || undefined, status: q.status || undefined, property,
        modifiedSince: q.since ? `${q.since}T00:00:00.000Z` : undefined,
      });
      const rows = await findOrderRows(db, user.businessId, listed.items.map((o) => o.id));
      const orders = listed.items.map((o) => rows.get(o.id)!).map((r) => ({ ...r, created: toIso(r.created_at), updated: toIso(r.updated_at) }));
      return page(reply, 'orders.eta', user, { ...view, orders, total: listed.total, pages: Math.ceil(listed.total / limit), link });
    } catch (error) {
      return page(reply.code(400), 'orders.eta', user, { ...view, link, error: problem(error) });
    }
  });

  app.get('/console/orders/:id', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const order = await findOrder(db, user.businessId, idOf(request));
    if (!order) throw new ApiError('NOT_FOUND', 'No such order.');
    // The latest 200 of its events (all that retention kept), shown oldest first.
    const history = await listLatestEvents(db, user.businessId, { limit: 200, resourceType: 'order', resourceId: order.id });
    const events = history.reverse().map((e) => ({ ...e, changes: flattenChanges(e.data.changes ?? {}) }));
    return page(reply, 'order.eta', user, { title: `Order ${order.internalReference}`, section: 'orders', order, events, partial: history.length === 200 });
  });

  // Events: the latest of the feed, newest first, filtered; the page refreshes itself (htmx).
  app.get('/console/events', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const q = request.query as Record<string, string | undefined>;
    const self = `/console/events?${new URLSearchParams(Object.entries(q).filter(([, v]) => v) as [string, string][])}`;
    const resourceTypes = RESOURCE_TYPES.filter((t) => !HIDDEN_FROM[user.role].includes(t));
    const view = { title: 'Events', section: 'events', q, self, resourceTypes, events: [] as unknown[], lastSequence: 0 };
    try {
      const types = checkTypes(typesOf(q.types));
      if (q.resourceId && !/^[A-Za-z0-9_-]{1,64}$/.test(q.resourceId)) throw new ApiError('VALIDATION_ERROR', 'A resource id is letters, digits, _ and -.');
      if (q.resourceType && !resourceTypes.includes(q.resourceType as never)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered resource types.');
      const latest = await lastSequence(db, user.businessId);
      const events = await listLatestEvents(db, user.businessId, {
        limit: 100, types, resourceType: q.resourceType || undefined, resourceId: q.resourceId || undefined, hiddenResourceTypes: HIDDEN_FROM[user.role],
      });
      return page(reply, 'events.eta', user, { ...view, events, lastSequence: latest });
    } catch (error) {
      return page(reply.code(400), 'events.eta', user, { ...view, error: problem(error) });
    }
  });

  const teamPage = async (reply: FastifyReply, user: SessionUser, extra: Record<string, unknown> = {}) =>
    page(reply, 'team.eta', user, { title: 'Team', section: 'team', users: await listUsers(db, user.businessId), ...extra });

  app.get('/console/team', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    if (user.role !== 'owner') return page(reply, 'message.eta', user, { title: 'Console', heading: `Signed in as ${user.name}`, message: 'Your role can read; the pages you may open are in the menu.' });
    return teamPage(reply, user);
  });

  app.post('/console/team', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const created = await writes.run(actorOf(user), (ctx) => createUser(ctx, { email: String(form.email ?? ''), name: String(form.name ?? ''), role: form.role as Role }));
      return teamPage(reply.code(201), user, { created: { email: created.user.email, password: created.password } });
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) {
        const detail = error.fieldErrors ? Object.values(error.fieldErrors).join('; ') : error.message;
        return teamPage(reply.code(error.status), user, { error: detail });
      }
      throw error;
    }
  });

  app.post('/console/team/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    const id = (request.params as { id: string }).id;
    if (id === user.id) throw new ApiError('VALIDATION_ERROR', 'You cannot change your own role or disable yourself here.');
    const change = form.action === 'disable' ? { status: 'disabled' as const } : { role: form.role as Role };
    await writes.run(actorOf(user), (ctx) => updateUser(ctx, id, change));
    return reply.redirect('/console/team', 303);
  });
}

/** A valid hash of a random password: verifying against it costs what a real check costs. */
const DUMMY_HASH = 'scrypt$17$8$1$c3VwcGx5bGluZS1kdW1teQ==$3Sk5lh4o5l0wF5mMZk5jD9m8Qd7a0cYh0r3xg8uQm1Q=';
