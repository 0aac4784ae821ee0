import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { namedEvent, purgeEventsBefore } from '../../src/log/events.ts';
import { listEvents } from '../../src/events/repository.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';

// The console without a browser: sessions, cookies, throttling, the team, the feed and the delivery log.

let offsetMs = 0;
/** Set to hold time still (the sign-in throttle's refill would otherwise depend on how fast scrypt runs here). */
let frozenAt: number | null = null;
const clock = () => frozenAt ?? Date.now() + offsetMs;
const HOUR = 3_600_000;
const HOST = 'console.test';
const FORM = { 'content-type': 'application/x-www-form-urlencoded', host: HOST };

async function addUser(ctx: TestContext, t: Tenant, role: 'owner' | 'admin' | 'viewer', email: string) {
  const { user, password } = await createWriteRunner(ctx.db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
    createUser(c, { email, name: `${role} ${email}`, role }),
  );
  return { ...user, password };
}

async function signIn(
  ctx: TestContext,
  email: string,
  password: string,
  headers: Record<string, string> = {},
  remoteAddress?: string,
) {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { ...FORM, ...headers },
    remoteAddress,
    payload: new URLSearchParams({ email, password }).toString(),
  });
  const setCookie = String(res.headers['set-cookie'] ?? '');
  return { status: res.statusCode, setCookie, cookie: setCookie.split(';')[0] };
}

const get = (ctx: TestContext, url: string, cookie: string) =>
  ctx.app.inject({ method: 'GET', url, headers: { cookie, host: HOST } });

async function post(ctx: TestContext, url: string, cookie: string, form: Record<string, string>) {
  const csrf = /name="csrf" value="([^"]+)"/.exec((await get(ctx, '/console/orders', cookie)).body)?.[1];
  assert.ok(csrf, 'a signed-in page carries a CSRF token');
  return ctx.app.inject({
    method: 'POST',
    url,
    headers: { ...FORM, cookie },
    payload: new URLSearchParams({ ...form, csrf }).toString(),
  });
}

/** Sent to sign in: to the page itself, or with the page asked for to return to after. */
const signedOut = (res: { statusCode: number; headers: Record<string, unknown> }) =>
  res.statusCode === 303 && /^\/console\/sign-in(?:\?next=|$)/.test(String(res.headers.location));

/** Follows an action's redirect as a browser does: with the one-time flash cookie it set. */
async function follow(
  ctx: TestContext,
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  cookie: string,
) {
  assert.equal(res.statusCode, 303, res.body.slice(0, 300));
  const flash = [res.headers['set-cookie']]
    .flat()
    .map(String)
    .find((c) => c.startsWith('sl_flash='))
    ?.split(';')[0];
  return get(ctx, String(res.headers.location), flash ? `${cookie}; ${flash}` : cookie);
}

describeEachBackend(
  'console sessions',
  (ctx) => {
    it('sets the session cookie HttpOnly, SameSite=Lax, for /console only, and not Secure unless configured', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `cookie-${ctx().backend}@example.com`);
      const { status, setCookie } = await signIn(ctx(), owner.email, owner.password);
      assert.equal(status, 303);
      assert.match(setCookie, /; Path=\/console;/);
      assert.match(setCookie, /; HttpOnly;/);
      assert.match(setCookie, /; SameSite=Lax;/);
      assert.doesNotMatch(setCookie, /Secure/);
    });

    it('ends a session after 12 hours idle, and after 7 days however often it is used', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `expiry-${ctx().backend}@example.com`);
      const idle = await signIn(ctx(), owner.email, owner.password);
      const busy = await signIn(ctx(), owner.email, owner.password);
      try {
        offsetMs += 11 * HOUR;
        assert.equal((await get(ctx(), '/console/orders', idle.cookie)).statusCode, 200, 'used within 12 hours');
        offsetMs += 12 * HOUR + 60_000;
        assert.ok(signedOut(await get(ctx(), '/console/orders', idle.cookie)), 'idle for over 12 hours');

        // The busy session was last used 23 hours ago by now: also idle. Sign in again and use it every 11 hours.
        assert.ok(signedOut(await get(ctx(), '/console/orders', busy.cookie)));
        const week = await signIn(ctx(), owner.email, owner.password);
        for (let hours = 11; hours < 7 * 24; hours += 11) {
          offsetMs += 11 * HOUR;
          assert.equal(
            (await get(ctx(), '/console/orders', week.cookie)).statusCode,
            200,
            `used every 11 hours, at ${hours} h`,
          );
        }
        offsetMs += 11 * HOUR;
        assert.ok(signedOut(await get(ctx(), '/console/orders', week.cookie)), 'past 7 days since sign-in');
      } finally {
        offsetMs = 0;
      }
    });

    it('throttles sign-in per address, whatever the email', async () => {
      const address = ctx().backend === 'sqlite' ? '10.20.30.40' : '10.20.30.41';
      // 20 a minute. Time stands still, so nothing refills meanwhile: each attempt costs a scrypt
      // (0.3–0.8 s, by machine), and with time running the refusal came anywhere from the 21st to the 28th.
      let refusedAt = -1;
      frozenAt = Date.now() + offsetMs;
      try {
        for (let i = 0; i < 30 && refusedAt < 0; i++) {
          const { status } = await signIn(ctx(), `nobody-${i}@example.com`, 'wrong password', {}, address);
          if (status === 429) refusedAt = i;
          else assert.equal(status, 401);
        }
        assert.equal(refusedAt + 1, 21, `refused from attempt ${refusedAt + 1}`);

        // Attempts refused by address do not spend the account's budget: a stranger cannot lock someone out.
        const t = await ctx().createTenant();
        const victim = await addUser(ctx(), t, 'admin', `victim-${ctx().backend}@example.com`);
        for (let i = 0; i < 8; i++) assert.equal((await signIn(ctx(), victim.email, 'guess', {}, address)).status, 429);
        assert.equal(
          (await signIn(ctx(), victim.email, victim.password, {}, '10.77.77.77')).status,
          303,
          'the victim still signs in',
        );
        assert.equal(
          (await signIn(ctx(), 'nobody-20@example.com', 'wrong password', {}, '10.99.99.99')).status,
          401,
          'another address is not held back',
        );
      } finally {
        frozenAt = null;
      }
    });

    it("throttles an account's guesses per address, so a stranger's guesses do not lock its owner out; many addresses together are throttled too", async () => {
      const t = await ctx().createTenant();
      const victim = await addUser(ctx(), t, 'admin', `locked-${ctx().backend}@example.com`);
      const stranger = ctx().backend === 'sqlite' ? '10.21.0.1' : '10.22.0.1';
      frozenAt = Date.now() + offsetMs;
      try {
        // Five a minute per account and address: the sixth guess from the stranger's address is refused...
        for (let i = 0; i < 5; i++)
          assert.equal((await signIn(ctx(), victim.email, 'guess', {}, stranger)).status, 401);
        assert.equal((await signIn(ctx(), victim.email, 'guess', {}, stranger)).status, 429);
        // ...and the owner, elsewhere, signs in.
        assert.equal((await signIn(ctx(), victim.email, victim.password, {}, '10.23.0.9')).status, 303);
        // 30 a minute per account from every address together: guesses spread over many addresses meet it.
        let refusedAt = -1;
        for (let i = 0; i < 40 && refusedAt < 0; i++) {
          const { status } = await signIn(ctx(), victim.email, 'guess', {}, `10.24.${i}.1`);
          if (status === 429) refusedAt = i;
        }
        // 5 guesses and a sign-in already spent 6 of the 30.
        assert.equal(refusedAt, 24);
      } finally {
        frozenAt = null;
      }
    });

    it('answers 400, never 500, to NUL in a form or an address, and ignores a repeated query parameter', async () => {
      const nul = await ctx().app.inject({
        method: 'POST',
        url: '/console/sign-in',
        headers: FORM,
        payload: 'email=a%00b%40example.com&password=x',
      });
      assert.equal(nul.statusCode, 400, nul.body.slice(0, 300));
      const t = await ctx().createTenant();
      const viewer = await addUser(ctx(), t, 'viewer', `nul-${ctx().backend}@example.com`);
      const { cookie } = await signIn(ctx(), viewer.email, viewer.password);
      for (const url of [
        '/console/orders?propertyPath=a&propertyValue=%00',
        '/console/orders/ord_%00',
        '/console/events?resourceId=%00',
      ]) {
        assert.equal((await get(ctx(), url, cookie)).statusCode, 400, url);
      }
      for (const url of [
        '/console/orders?propertyPath=a&propertyPath=b',
        '/console/events?types=order.*&types=item.*',
        '/console/orders?page=1&page=2',
      ]) {
        assert.equal((await get(ctx(), url, cookie)).statusCode, 200, url);
      }
    });

    it('refuses a sign-in posted from another site (Origin, Sec-Fetch-Site), and takes one from its own', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `origin-${ctx().backend}@example.com`);
      assert.equal(
        (await signIn(ctx(), owner.email, owner.password, { origin: 'https://attacker.example' })).status,
        403,
      );
      assert.equal((await signIn(ctx(), owner.email, owner.password, { origin: 'null' })).status, 403);
      assert.equal((await signIn(ctx(), owner.email, owner.password, { 'sec-fetch-site': 'cross-site' })).status, 403);
      assert.equal(
        (
          await signIn(ctx(), owner.email, owner.password, {
            origin: `http://${HOST}`,
            'sec-fetch-site': 'same-origin',
          })
        ).status,
        303,
      );
    });

    it('lets the owner change a role and disable a user, each an event with the owner as actor; disabling ends their sessions', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `team-owner-${ctx().backend}@example.com`);
      const viewer = await addUser(ctx(), t, 'viewer', `team-viewer-${ctx().backend}@example.com`);
      const ownerSession = await signIn(ctx(), owner.email, owner.password);
      const viewerSession = await signIn(ctx(), viewer.email, viewer.password);
      assert.equal((await get(ctx(), '/console/webhooks', viewerSession.cookie)).statusCode, 403);

      assert.equal(
        (await post(ctx(), `/console/team/${viewer.id}`, ownerSession.cookie, { role: 'admin' })).statusCode,
        303,
      );
      assert.equal((await get(ctx(), '/console/webhooks', viewerSession.cookie)).statusCode, 200, 'now an admin');
      assert.equal(
        (await get(ctx(), '/console/keys', viewerSession.cookie)).statusCode,
        403,
        "keys are the owners' alone",
      );
      assert.equal((await post(ctx(), `/console/team/${viewer.id}/disable`, ownerSession.cookie, {})).statusCode, 303);
      assert.ok(signedOut(await get(ctx(), '/console/webhooks', viewerSession.cookie)));
      assert.equal((await signIn(ctx(), viewer.email, viewer.password)).status, 401, 'a disabled user cannot sign in');

      const events = (await listEvents(ctx().db, t.businessId, { after: 0, limit: 100, resourceId: viewer.id })).items;
      assert.deepEqual(
        events.map((e) => e.type),
        ['user.created', 'user.updated', 'user.updated'],
      );
      for (const e of events.slice(1)) assert.deepEqual(e.actor, { type: 'user', id: owner.id, name: owner.name });
      assert.deepEqual((events[1].data.changes as any).role, { from: 'viewer', to: 'admin' });
      assert.deepEqual((events[2].data.changes as any).status, { from: 'active', to: 'disabled' });
    });

    it('shows the newest events first, only of resources the role may open, and filters by resource type', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `feed-owner-${ctx().backend}@example.com`);
      const viewer = await addUser(ctx(), t, 'viewer', `feed-viewer-${ctx().backend}@example.com`);
      // 1,200 events of made-up items in one write, then an API key's event last.
      await createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, async (c) => {
        for (let i = 0; i < 1200; i++)
          c.emit(namedEvent('item', 'created', { id: `itm_feed${String(i).padStart(5, '0')}` }));
      });
      await ctx().addKey(t);
      const ownerSession = await signIn(ctx(), owner.email, owner.password);
      const viewerSession = await signIn(ctx(), viewer.email, viewer.password);

      const sequences = (html: string) => [...html.matchAll(/<tr><td>(\d+)<\/td>/g)].map((m) => Number(m[1]));
      const ownerPage = (await get(ctx(), '/console/events', ownerSession.cookie)).body;
      const latest = sequences(ownerPage);
      assert.equal(latest.length, 100);
      assert.ok(
        latest.every((s, i) => i === 0 || s < latest[i - 1]),
        'newest first',
      );
      assert.match(ownerPage, /api_key\.created/);
      assert.ok(ownerPage.includes('itm_feed01199'), 'the newest item event is on the first page');

      const viewerPage = (await get(ctx(), '/console/events', viewerSession.cookie)).body;
      assert.doesNotMatch(viewerPage, /api_key\./, 'a viewer never sees key events');
      assert.doesNotMatch(viewerPage, /<option value="api_key"/);
      assert.equal((await get(ctx(), '/console/events?resourceType=api_key', viewerSession.cookie)).statusCode, 400);

      const keysOnly = (await get(ctx(), '/console/events?resourceType=api_key', ownerSession.cookie)).body;
      assert.equal(sequences(keysOnly).length, 2, 'the first key and the added one');
    });

    it("shows an order's history after retention removed its oldest events", async () => {
      const t = await ctx().createTenant();
      const viewer = await addUser(ctx(), t, 'viewer', `history-${ctx().backend}@example.com`);
      const fixture = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, fixture);
      await purgeEventsBefore(ctx().db, new Date(Date.now() + 60_000).toISOString());
      await patchOrder(ctx(), t, order.id, { order: { notes: 'After the purge' } });
      const session = await signIn(ctx(), viewer.email, viewer.password);
      const res = await get(ctx(), `/console/orders/${order.id}`, session.cookie);
      assert.equal(res.statusCode, 200, res.body.slice(0, 500));
      assert.match(res.body, /order\.updated/);
      assert.doesNotMatch(res.body, /order\.created/);
    });

    it("lists an endpoint's deliveries newest first, 50 a page with a link to older ones, and rotates its secret as the user", async () => {
      const t = await ctx().createTenant();
      const admin = await addUser(ctx(), t, 'admin', `log-${ctx().backend}@example.com`);
      const session = await signIn(ctx(), admin.email, admin.password);
      const created = await post(ctx(), '/console/webhooks', session.cookie, {
        url: 'https://hooks.example.com/supplyline',
        eventTypes: 'order.*',
      });
      assert.equal(created.statusCode, 303, created.body.slice(0, 500));
      const endpointId = /^\/console\/webhooks\/(we_[0-9a-z]+)$/.exec(String(created.headers.location))![1];
      for (let i = 0; i < 51; i++) {
        assert.equal((await post(ctx(), `/console/webhooks/${endpointId}/test`, session.cookie, {})).statusCode, 303);
      }
      const first = await get(ctx(), `/console/webhooks/${endpointId}`, session.cookie);
      const ids = (html: string) => [...html.matchAll(/<code>(evt_[0-9a-z]+)<\/code>/g)].map((m) => m[1]);
      const page1 = ids(first.body);
      assert.equal(page1.length, 50);
      assert.ok(
        page1.every((id, i) => i === 0 || id < page1[i - 1]),
        'newest first',
      );
      const older = /href="([^"]+before=[^"]+)">Older deliveries/.exec(first.body)![1].replaceAll('&amp;', '&');
      const page2 = ids((await get(ctx(), older, session.cookie)).body);
      assert.equal(page2.length, 1);
      assert.ok(page2[0] < page1[49]);

      const rotated = await follow(
        ctx(),
        await post(ctx(), `/console/webhooks/${endpointId}/rotate`, session.cookie, { graceSeconds: '3600' }),
        session.cookie,
      );
      assert.match(rotated.body, /whsec_[A-Za-z0-9+/=]{40,}/);
      assert.match(rotated.body, /The previous secret signs too until/);
      const events = (await listEvents(ctx().db, t.businessId, { after: 0, limit: 100, resourceId: endpointId })).items;
      assert.deepEqual(
        events.map((e) => e.type),
        ['webhook_endpoint.created', 'webhook_endpoint.updated'],
      );
      assert.equal(events[1].actor.id, admin.id);
      assert.doesNotMatch(JSON.stringify(events), /whsec_/, 'no secret in the log');
    });
  },
  { clock, config: { webhooks: { ...loadConfig({}).webhooks, workers: false } } },
);

describeEachBackend(
  'console sessions served over https',
  (ctx) => {
    it('marks the session cookie Secure when CONSOLE_COOKIE_SECURE is on', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(ctx(), t, 'owner', `secure-${ctx().backend}@example.com`);
      const { status, setCookie } = await signIn(ctx(), owner.email, owner.password);
      assert.equal(status, 303);
      assert.match(setCookie, /; Secure/);
    });
  },
  { config: { consoleCookieSecure: true } },
);
