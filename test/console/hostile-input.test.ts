import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import fc from 'fast-check';
import { createSession, csrfTokenOf, SESSION_COOKIE } from '../../src/console/session.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

// The console's pages are not in /openapi.json, so the generated API walks (fuzz.test.ts, the
// security cases) never reach them. This walks every console route found in src/console: hostile
// ids, queries and forms never answer 5xx, and another business's resources are a 404.

const HOST = 'console.test';
const SOURCE_DIR = join(import.meta.dirname, '..', '..', 'src', 'console');

/** Every console route, read from the sources, so a new page is walked the moment it exists. */
function consoleRoutes(): Array<{ method: 'GET' | 'POST'; path: string }> {
  const routes: Array<{ method: 'GET' | 'POST'; path: string }> = [];
  for (const file of readdirSync(SOURCE_DIR).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(join(SOURCE_DIR, file), 'utf8').matchAll(/app\.(get|post)\('(\/console[^']*)'/g)) {
      routes.push({ method: m[1].toUpperCase() as 'GET' | 'POST', path: m[2] });
    }
  }
  return routes;
}

interface Session {
  cookie: string;
  csrf: string;
  userId: string;
}

/** A signed-in owner, without the sign-in form (scrypt, and its throttle, would make the walk slow). */
async function session(ctx: TestContext, t: Tenant, tag: string): Promise<Session> {
  const { user } = await createWriteRunner(ctx.db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
    createUser(c, {
      email: `${tag}-${ctx.backend}-${Math.random().toString(36).slice(2)}@example.com`,
      name: tag,
      role: 'owner',
    }),
  );
  return renew(ctx, t, user.id);
}

/** Another session of the same user (after the walk signed out). */
async function renew(ctx: TestContext, t: Tenant, userId: string): Promise<Session> {
  const token = await createSession(ctx.db, { id: userId, business_id: t.businessId }, Date.now());
  return { cookie: `${SESSION_COOKIE}=${token}`, csrf: csrfTokenOf(token), userId };
}

let client = 0;

/** A path segment; a lone surrogate, which encodeURIComponent refuses, goes as its bytes (not UTF-8). */
const segment = (value: string) => {
  try {
    return encodeURIComponent(value);
  } catch {
    return '%ED%A0%80';
  }
};

function send(ctx: TestContext, method: 'GET' | 'POST', url: string, s: Session, form?: Record<string, string>) {
  // Each request from an address of its own, so sign-in's throttle (20 a minute per address) does not hide what is behind it.
  client++;
  return ctx.app.inject({
    method,
    url,
    remoteAddress: `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}`,
    headers: { host: HOST, cookie: s.cookie, ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    payload: form ? new URLSearchParams({ ...form, csrf: s.csrf }).toString() : undefined,
  });
}

/** One of each resource a console route can name, in a business of its own. */
async function resources(ctx: TestContext, t: Tenant, s: Session) {
  const f = await createFixture(ctx, t);
  const order = await createOrder(ctx, t, f);
  const hook = await ctx.request('POST', '/api/v1/webhook-endpoints', {
    as: t,
    body: { url: 'https://hooks.example.com/walk' },
  });
  assert.equal(hook.status, 201);
  const line = `${JSON.stringify({ op: 'create', resource: 'buyer', data: { buyer: { name: 'Imported' } } })}\n`;
  const imported = await ctx.request('POST', '/api/v1/imports', {
    as: t,
    body: line,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  assert.equal(imported.status, 202);
  return {
    order: order.id as string,
    webhook: hook.body.id as string,
    key: t.keyId,
    user: s.userId,
    import: imported.body.id as string,
  };
}

const FIELDS = [
  'page',
  'propertyPath',
  'propertyValue',
  'propertyExists',
  'phase',
  'status',
  'since',
  'types',
  'resourceId',
  'resourceType',
  'before',
  'after',
  'name',
  'expiresInDays',
  'email',
  'password',
  'role',
  'action',
  'url',
  'description',
  'eventTypes',
  'afterSequence',
  'untilSequence',
  'graceSeconds',
  'current',
  'repeat',
  'next',
  'signed',
  'x',
];
const HOSTILE = [
  'valueOf',
  '__proto__',
  'constructor',
  '',
  '0',
  '-1',
  '1e309',
  'NaN',
  '9'.repeat(40),
  'a'.repeat(5000),
  '\u0000',
  'a\u0000b@example.com',
  '%00',
  '../..',
  '<script>',
  '\ud800',
  '2026-13-45',
  'order.*',
  'enabled',
  'owner',
  'disable',
  '3600',
];
const value = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom(...HOSTILE));

describeEachBackend('the console under hostile input', (ctx) => {
  it('finds every console route in the sources', () => {
    const routes = consoleRoutes();
    assert.ok(routes.length >= 20, `${routes.length} routes`);
    assert.ok(routes.some((r) => r.method === 'POST' && r.path === '/console/webhooks/:id/replay'));
    assert.ok(routes.some((r) => r.method === 'GET' && r.path === '/console/team/:id/reset-password'));
    assert.ok(routes.some((r) => r.method === 'POST' && r.path === '/console/account/password'));
  });

  it('never answers 5xx to arbitrary ids, queries and forms, signed in as an owner', async () => {
    const t = await ctx().createTenant();
    let s = await session(ctx(), t, 'walker');
    const own = await resources(ctx(), t, s);
    const id = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom(
        own.order,
        own.webhook,
        own.key,
        'ord_x',
        '..',
        '%00',
        'a'.repeat(300),
        'valueOf',
        '__proto__',
        'constructor',
      ),
    );
    const fields = fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 6 });
    for (const { method, path } of consoleRoutes()) {
      await fc.assert(
        fc.asyncProperty(id, fields, async (rawId, input) => {
          const base = path.replace(/:[a-z]+/g, segment(rawId));
          const url = method === 'GET' ? `${base}?${new URLSearchParams(input)}` : base;
          const res = await send(ctx(), method, url, s, method === 'POST' ? input : undefined);
          assert.ok(
            res.statusCode < 500,
            `${method} ${url} ${JSON.stringify(input).slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 300)}`,
          );
          // Signing out ends the session: the walk goes on with a new one. (The ids never name the walker,
          // so the team page cannot disable it.)
          if (path.includes('sign-out')) s = await renew(ctx(), t, s.userId);
        }),
        { numRuns: path.includes('sign-in') ? 8 : 25 },
      );
    }
  });

  it('never answers 5xx when every field of a form or query holds the same hostile value', async () => {
    const t = await ctx().createTenant();
    let s = await session(ctx(), t, 'every-field');
    const own = await resources(ctx(), t, s);
    for (const { method, path } of consoleRoutes()) {
      for (const [i, hostile] of HOSTILE.entries()) {
        const input = Object.fromEntries(FIELDS.map((f) => [f, hostile]));
        const base = path.replace(/:[a-z]+/g, segment([own.order, own.webhook, own.key, hostile][i % 4]));
        const url = method === 'GET' ? `${base}?${new URLSearchParams(input)}` : base;
        const res = await send(ctx(), method, url, s, method === 'POST' ? input : undefined);
        assert.ok(
          res.statusCode < 500,
          `${method} ${url.slice(0, 200)} with every field ${JSON.stringify(hostile).slice(0, 40)} -> ${res.statusCode} ${res.body.slice(0, 300)}`,
        );
        if (path.includes('sign-out')) s = await renew(ctx(), t, s.userId);
      }
    }
  });

  it('answers 400 to a changed-since day that is no calendar day, and 200 to one that is', async () => {
    const t = await ctx().createTenant();
    const s = await session(ctx(), t, 'since');
    // PostgreSQL refuses '2026-13-45' and '2026-02-30' as timestamps where SQLite compares text:
    // the console checks the day itself, so both backends answer the same.
    for (const since of ['2026-13-45', '2026-02-30', '2025-02-29', '0000-01-01', '2026-00-10']) {
      const res = await send(ctx(), 'GET', `/console/orders?since=${since}`, s);
      assert.equal(res.statusCode, 400, `${since} -> ${res.statusCode}`);
      assert.match(res.body, /Changed since is a date/);
    }
    for (const since of ['2024-02-29', '2026-12-31', '0001-01-01']) {
      const res = await send(ctx(), 'GET', `/console/orders?since=${since}`, s);
      assert.equal(res.statusCode, 200, `${since} -> ${res.statusCode}`);
    }
  });

  it("answers 404 for another business's order, endpoint, key and user on every route that names one, and changes nothing", async () => {
    const mine = await ctx().createTenant();
    const theirs = await ctx().createTenant();
    const me = await session(ctx(), mine, 'me');
    const them = await session(ctx(), theirs, 'them');
    const other = await resources(ctx(), theirs, them);
    const forms: Record<string, Record<string, string>> = {
      '/console/keys/:id/rotate': { graceSeconds: '3600' },
      '/console/team/:id': { role: 'viewer' },
      '/console/webhooks/:id': { status: 'paused', eventTypes: '' },
      '/console/webhooks/:id/rotate': { graceSeconds: '0' },
      '/console/webhooks/:id/replay': { afterSequence: '0', untilSequence: '1' },
    };
    const named = consoleRoutes().filter((r) => r.path.includes('/:id'));
    assert.ok(named.length >= 9, `${named.length} routes name a resource`);
    for (const { method, path } of named) {
      for (const [kind, id] of Object.entries(other)) {
        const res = await send(
          ctx(),
          method,
          path.replace(':id', id),
          me,
          method === 'POST' ? (forms[path] ?? {}) : undefined,
        );
        assert.equal(
          res.statusCode,
          404,
          `${method} ${path} with their ${kind} -> ${res.statusCode} ${res.body.slice(0, 200)}`,
        );
      }
    }
    // An id no record can have (another script, a line break) is a 404 page, or a form's error
    // redirect, never a 500 from a redirect's Location that cannot hold it; with forms that fail too.
    const failing: Record<string, string> = {
      graceSeconds: 'x',
      afterSequence: 'x',
      eventTypes: 'bogus',
      role: 'king',
    };
    for (const { method, path } of named) {
      for (const id of ['€', 'x\r\ny', 'ord x']) {
        const url = path.replace(':id', encodeURIComponent(id));
        const res = await send(ctx(), method, url, me, method === 'POST' ? failing : undefined);
        const said = `${method} ${path} with ${JSON.stringify(id)} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
        if (res.statusCode === 303) assert.match(String(res.headers.location), /^\/console\/[\x21-\x7e]*$/, said);
        else {
          assert.equal(res.statusCode, 404, said);
          assert.match(res.headers['content-type'] as string, /^text\/html/, said);
          assert.equal(res.headers.location, undefined, said);
        }
      }
    }
    // Their key still works, their endpoint is still enabled, their owner is still an owner with a live session.
    assert.equal(
      (await ctx().request('GET', `/api/v1/webhook-endpoints/${other.webhook}`, { as: theirs })).body.status,
      'enabled',
    );
    assert.equal((await send(ctx(), 'GET', '/console/keys', them)).statusCode, 200);
    assert.equal((await send(ctx(), 'GET', `/console/orders/${other.order}`, them)).statusCode, 200);
  });

  it("refuses every form without the session's CSRF token, whatever it holds", async () => {
    const t = await ctx().createTenant();
    const s = await session(ctx(), t, 'csrf');
    for (const { path } of consoleRoutes().filter((r) => r.method === 'POST' && r.path !== '/console/sign-in')) {
      await fc.assert(
        fc.asyncProperty(fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 4 }), async (input) => {
          const res = await ctx().app.inject({
            method: 'POST',
            url: path.replace(':id', 'x'),
            headers: { host: HOST, cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams(input).toString(),
          });
          // 400 when the form itself cannot be read (a NUL), before the token is looked at.
          assert.ok(res.statusCode === 403 || res.statusCode === 400, `${path} -> ${res.statusCode}`);
        }),
        { numRuns: 5 },
      );
    }
  });
});
