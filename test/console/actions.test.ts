import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { listApiKeys } from '../../src/businesses/repository.ts';
import { openFlash, sealFlash } from '../../src/console/flash.ts';
import { count, money, tree, when } from '../../src/console/format.ts';
import { localNext } from '../../src/console/kit.ts';
import { flattenChanges } from '../../src/console/orders.ts';
import { loadConfig } from '../../src/config.ts';
import { listEvents } from '../../src/events/repository.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

// What the console's actions do without a browser: every POST ends in a redirect with a one-time
// flash (secrets in it sealed to the session), destructive actions ask first, unknown pages are
// HTML, sign-in returns to the page asked for, and passwords change. browser.test.ts reloads them.

const HOST = 'console.test';
const FORM = { 'content-type': 'application/x-www-form-urlencoded', host: HOST };
type Res = { statusCode: number; headers: Record<string, unknown>; body: string };

it('formats money by its currency, exactly, and counts in words', () => {
  assert.equal(money('25', 'AUD'), '25.00 AUD');
  assert.equal(money('25.5', 'AUD'), '25.50 AUD');
  assert.equal(money('1500', 'JPY'), '1,500 JPY');
  assert.equal(money('1234567.891', 'BHD'), '1,234,567.891 BHD');
  assert.equal(money('0.1234', 'AUD'), '0.1234 AUD', 'a unit price keeps its digits');
  assert.equal(money('12345678901234567890.10', 'EUR'), '12,345,678,901,234,567,890.10 EUR', 'no float');
  assert.equal(money('-3', 'USD'), '-3.00 USD');
  assert.equal(count(1, 'order'), '1 order');
  assert.equal(count(3, 'order'), '3 orders');
  assert.equal(count(1200, 'entry', 'entries'), '1,200 entries');
});

it('writes times that read well without script, with the exact UTC time on hover', () => {
  assert.equal(
    when('2026-11-24T10:03:27.123Z'),
    '<time datetime="2026-11-24T10:03:27.123Z" title="2026-11-24 10:03:27 UTC">24 Nov 2026, 10:03 UTC</time>',
  );
  assert.equal(when(null, 'never'), 'never');
  assert.equal(
    tree({ erp: { no: 77, tags: ['a', 'b'] }, '<x>': '<b>' }),
    '<ul class="tree"><li><code>erp</code>: <ul><li><code>no</code>: 77</li><li><code>tags</code>: [&#34;a&#34;,&#34;b&#34;]</li></ul></li><li><code>&#60;x&#62;</code>: &#60;b&#62;</li></ul>',
  );
  assert.deepEqual(
    flattenChanges({ properties: { from: null }, 'properties.erp.no': { to: 77 }, notes: { from: 'a', to: null } }),
    [
      { path: 'properties.erp.no', from: '(none)', to: '77' },
      { path: 'notes', from: 'a', to: '(none)' },
    ],
  );
});

it('returns after sign-in only to a console path of this host', () => {
  assert.equal(localNext('/console/orders?phase=ACTIVE'), '/console/orders?phase=ACTIVE');
  assert.equal(localNext('/console/webhooks/we_1'), '/console/webhooks/we_1');
  for (const hostile of [
    '//evil.example/console',
    'https://evil.example/console',
    '/console/../../x',
    '/consolex',
    '/console\\@evil.example',
    '/console/sign-in?next=/console/keys',
    '/console/sign-out',
    '/\t/evil.example',
    'javascript:alert(1)',
    '',
    '/console/%0d%0aSet-Cookie:x',
    'x'.repeat(3000),
  ]) {
    const next = localNext(hostile);
    assert.ok(
      next === '/console' ||
        (next.startsWith('/console/') && !next.includes('\n') && !next.startsWith('/console/sign-')),
      `${hostile} -> ${next}`,
    );
  }
  assert.equal(localNext('/console/../../x'), '/console');
  assert.equal(localNext('//evil.example/console'), '/console');
});

it('seals a flash to its session: another session cannot open it, and a changed byte opens nothing', () => {
  const sealed = sealFlash('session-a', {
    at: '/console/keys',
    secret: { id: 'k', title: 'Key', value: 'sl_live_secret' },
  });
  assert.doesNotMatch(Buffer.from(sealed, 'base64url').toString('latin1'), /sl_live_secret/);
  assert.equal(openFlash('session-a', `sl_flash=${sealed}`)?.secret?.value, 'sl_live_secret');
  assert.equal(openFlash('session-b', `sl_flash=${sealed}`), null);
  const flipped = Buffer.from(sealed, 'base64url');
  flipped[20] ^= 1;
  assert.equal(openFlash('session-a', `sl_flash=${flipped.toString('base64url')}`), null);
});

it('has no inline script or event-handler attribute in any template', () => {
  const dir = join(import.meta.dirname, '..', '..', 'src', 'console', 'views');
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), 'utf8');
    assert.doesNotMatch(text, /\son[a-z]+\s*=/i, file);
    assert.doesNotMatch(text, /<script(?![^>]*\ssrc=)/i, file);
    assert.doesNotMatch(text, /\sstyle\s*=/i, file);
  }
});

describeEachBackend(
  'console actions',
  (ctx) => {
    async function addUser(t: Tenant, role: 'owner' | 'admin' | 'viewer', tag: string) {
      const email = `${tag}-${ctx().backend}-${Math.random().toString(36).slice(2, 8)}@example.com`;
      const { user, password } = await createWriteRunner(ctx().db).run(
        { businessId: t.businessId, actor: SYSTEM },
        (c) => createUser(c, { email, name: `${tag} person`, role }),
      );
      return { ...user, password };
    }
    async function signIn(email: string, password: string, next?: string) {
      const res = await ctx().app.inject({
        method: 'POST',
        url: '/console/sign-in',
        headers: FORM,
        payload: new URLSearchParams({ email, password, ...(next ? { next } : {}) }).toString(),
      });
      return { res, cookie: String(res.headers['set-cookie'] ?? '').split(';')[0] };
    }
    const get = (url: string, cookie: string) =>
      ctx().app.inject({ method: 'GET', url, headers: { cookie, host: HOST } });
    async function post(url: string, cookie: string, form: Record<string, string>): Promise<Res> {
      const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/console/orders', cookie)).body)?.[1];
      assert.ok(csrf);
      return ctx().app.inject({
        method: 'POST',
        url,
        headers: { ...FORM, cookie },
        payload: new URLSearchParams({ ...form, csrf }).toString(),
      });
    }
    const flashOf = (res: Res) =>
      [res.headers['set-cookie']]
        .flat()
        .map(String)
        .find((c) => c.startsWith('sl_flash='))
        ?.split(';')[0];
    /** An action: a 303 (never a page rendered from the POST), then the page it leads to, with its flash, as a browser follows it. */
    async function act(url: string, cookie: string, form: Record<string, string>, to?: RegExp) {
      const res = await post(url, cookie, form);
      assert.equal(res.statusCode, 303, `${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`);
      const location = String(res.headers.location);
      if (to) assert.match(location, to);
      const flash = flashOf(res);
      const shown = await get(location, flash ? `${cookie}; ${flash}` : cookie);
      return { res, location, flash, shown };
    }

    it('ends every action in a redirect; the key is shown once, from a flash sealed to the session, and never in the address, the log or the database', async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(t, 'owner', 'prg');
      const { cookie } = await signIn(owner.email, owner.password);
      const created = await act(
        '/console/keys',
        cookie,
        { name: 'ERP integration', expiresInDays: '90' },
        /^\/console\/keys$/,
      );
      const key = /id="new-key-value">(sl_live_[0-9A-Za-z]+)</.exec(created.shown.body)?.[1];
      assert.ok(key, 'shown on the page the action led to');
      assert.match(
        created.shown.body,
        /Created the key &#34;ERP integration&#34;|Created the key "ERP integration"|Created the key &quot;ERP integration&quot;/,
      );
      assert.match(
        String(created.shown.headers['set-cookie']),
        /sl_flash=; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=0/,
        'cleared as it is shown',
      );
      assert.doesNotMatch(
        created.location + created.flash,
        new RegExp(key.slice(8)),
        'not in the address or the cookie in the clear',
      );
      // A reload (the browser has dropped the cleared cookie) shows no key and makes none.
      const reload = await get('/console/keys', cookie);
      assert.doesNotMatch(reload.body, /new-key-value/);
      assert.equal((await listApiKeys(ctx().db, t.businessId)).filter((k) => k.name === 'ERP integration').length, 1);
      // Another session of the same user, given the flash cookie, cannot open it.
      const other = await signIn(owner.email, owner.password);
      assert.doesNotMatch((await get('/console/keys', `${other.cookie}; ${created.flash}`)).body, /new-key-value/);
      const stored =
        JSON.stringify(await ctx().db.selectFrom('api_keys').selectAll().execute()) +
        JSON.stringify(await ctx().db.selectFrom('audit_events').selectAll().execute()) +
        JSON.stringify((await listEvents(ctx().db, t.businessId, { after: 0, limit: 1000 })).items);
      assert.doesNotMatch(stored, new RegExp(key.slice(8)));

      // Rotation keeps the expiry; the new key is shown once.
      const old = (await listApiKeys(ctx().db, t.businessId)).find((k) => k.name === 'ERP integration')!;
      const rotated = await act(
        `/console/keys/${old.id}/rotate`,
        cookie,
        { graceSeconds: '3600' },
        /^\/console\/keys$/,
      );
      assert.match(rotated.shown.body, /id="new-key-value">sl_live_/);
      assert.match(rotated.shown.body, /keeps working until \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      const fresh = (await listApiKeys(ctx().db, t.businessId)).filter((k) => k.name === 'ERP integration').at(-1)!;
      assert.notEqual(fresh.id, old.id);
      assert.equal(fresh.expiresAt, old.expiresAt, 'the new key expires when the old one was to');

      // Revoking asks first: a page whose form does it; the keys page links there, and posts nothing.
      const keys = (await get('/console/keys', cookie)).body;
      assert.match(keys, new RegExp(`href="/console/keys/${fresh.id}/revoke"`));
      assert.doesNotMatch(keys, new RegExp(`action="/console/keys/${fresh.id}/revoke"`));
      const ask = await get(`/console/keys/${fresh.id}/revoke`, cookie);
      assert.equal(ask.statusCode, 200);
      assert.match(
        ask.body,
        /Revoke the key &#34;ERP integration&#34;\?|Revoke the key "ERP integration"\?|Revoke the key &quot;ERP integration&quot;\?/,
      );
      assert.match(ask.body, new RegExp(`action="/console/keys/${fresh.id}/revoke"[\\s\\S]*name="csrf"`));
      assert.equal((await listApiKeys(ctx().db, t.businessId, fresh.id))[0].revokedAt, null, 'asking changes nothing');
      const revoked = await act(`/console/keys/${fresh.id}/revoke`, cookie, {}, /^\/console\/keys$/);
      assert.match(revoked.shown.body, /Revoked the key/);
      assert.notEqual((await listApiKeys(ctx().db, t.businessId, fresh.id))[0].revokedAt, null);
      // A refused form comes back as an error, also by redirect.
      const refused = await act('/console/keys', cookie, { name: '' }, /^\/console\/keys$/);
      assert.match(refused.shown.body, /role="alert">A key needs a name/);
    });

    it('redirects webhook actions, shows and edits the description, and asks before disabling or deleting', async () => {
      const t = await ctx().createTenant();
      const admin = await addUser(t, 'admin', 'hooks');
      const { cookie } = await signIn(admin.email, admin.password);
      const created = await act(
        '/console/webhooks',
        cookie,
        { url: 'https://hooks.example.com/a', description: 'Sage sync', eventTypes: 'order.*' },
        /^\/console\/webhooks\/we_/,
      );
      assert.match(created.shown.body, /id="new-secret-value">whsec_/);
      assert.match(created.shown.body, /Sage sync/);
      assert.match((await get('/console/webhooks', cookie)).body, /<td>Sage sync<\/td>/);
      const id = created.location.split('/').at(-1)!;
      const saved = await act(`/console/webhooks/${id}`, cookie, {
        description: 'Sage 200 order sync',
        eventTypes: 'order.*',
        status: 'paused',
      });
      assert.match(saved.shown.body, /role="status">Saved\./);
      assert.match(saved.shown.body, /value="Sage 200 order sync"/);
      const tested = await act(`/console/webhooks/${id}/test`, cookie, {});
      assert.match(tested.shown.body, /webhook\.test event is on its way/);
      // Saving with "disabled" does not disable: that asks first.
      await act(`/console/webhooks/${id}`, cookie, { eventTypes: '', status: 'disabled' });
      assert.equal((await ctx().request('GET', `/api/v1/webhook-endpoints/${id}`, { as: t })).body.status, 'paused');
      assert.match(
        (await get(`/console/webhooks/${id}/disable`, cookie)).body,
        /Disable https:\/\/hooks\.example\.com\/a\?/,
      );
      const disabled = await act(`/console/webhooks/${id}/disable`, cookie, {});
      assert.match(disabled.shown.body, /Disabled: nothing more is sent/);
      assert.equal((await ctx().request('GET', `/api/v1/webhook-endpoints/${id}`, { as: t })).body.status, 'disabled');
      assert.match((await get(`/console/webhooks/${id}/delete`, cookie)).body, /This cannot be undone/);
      const deleted = await act(`/console/webhooks/${id}/delete`, cookie, {}, /^\/console\/webhooks$/);
      assert.match(deleted.shown.body, /Deleted https:\/\/hooks\.example\.com\/a\./);
      assert.equal((await get(`/console/webhooks/${id}`, cookie)).statusCode, 404);
    });

    it('answers an unknown console page with an HTML 404, and returns to the page asked for after sign-in', async () => {
      const t = await ctx().createTenant();
      const viewer = await addUser(t, 'viewer', 'next');
      for (const cookie of ['', (await signIn(viewer.email, viewer.password)).cookie]) {
        const res = await get('/console/no/such/page', cookie);
        assert.equal(res.statusCode, 404);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.match(res.body, /No such page/);
        assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
      }
      const away = await get('/console/orders?phase=ACTIVE', '');
      assert.equal(away.statusCode, 303);
      assert.equal(away.headers.location, '/console/sign-in?next=%2Fconsole%2Forders%3Fphase%3DACTIVE');
      const form = await get(String(away.headers.location), '');
      assert.match(form.body, /name="next" value="\/console\/orders\?phase=ACTIVE"/);
      assert.equal(
        (await signIn(viewer.email, viewer.password, '/console/orders?phase=ACTIVE')).res.headers.location,
        '/console/orders?phase=ACTIVE',
      );
      assert.equal((await signIn(viewer.email, viewer.password, '//evil.example/x')).res.headers.location, '/console');
      // Signing out says so; signing out everywhere asks first.
      const { cookie } = await signIn(viewer.email, viewer.password);
      assert.match((await get('/console/sign-out-everywhere', cookie)).body, /Sign out everywhere\?/);
      const out = await post('/console/sign-out-everywhere', cookie, {});
      assert.equal(out.headers.location, '/console/sign-in?signed=everywhere');
      assert.match((await get(String(out.headers.location), '')).body, /signed out on every device/);
    });

    it("changes your own password (ending your other sessions), and lets an owner reset another user's, shown once, ending theirs", async () => {
      const t = await ctx().createTenant();
      const owner = await addUser(t, 'owner', 'reset-owner');
      const viewer = await addUser(t, 'viewer', 'reset-viewer');
      const here = await signIn(viewer.email, viewer.password);
      const elsewhere = await signIn(viewer.email, viewer.password);
      const wrong = await act(
        '/console/account/password',
        here.cookie,
        { current: 'not it at all', password: 'a new long password', repeat: 'a new long password' },
        /^\/console\/account$/,
      );
      assert.match(wrong.shown.body, /role="alert">Your current password is not that one/);
      const changed = await act(
        '/console/account/password',
        here.cookie,
        { current: viewer.password, password: 'a new long password', repeat: 'a new long password' },
        /^\/console\/account$/,
      );
      assert.match(changed.shown.body, /Your password is changed/);
      assert.equal((await get('/console/orders', here.cookie)).statusCode, 200, 'this session goes on');
      assert.equal((await get('/console/orders', elsewhere.cookie)).statusCode, 303, 'the other ended');
      assert.equal((await signIn(viewer.email, viewer.password)).res.statusCode, 401);
      assert.equal((await signIn(viewer.email, 'a new long password')).res.statusCode, 303);

      const { cookie } = await signIn(owner.email, owner.password);
      assert.match(
        (await get(`/console/team/${viewer.id}/reset-password`, cookie)).body,
        new RegExp(`action="/console/team/${viewer.id}/reset-password"`),
      );
      const reset = await act(`/console/team/${viewer.id}/reset-password`, cookie, {}, /^\/console\/team$/);
      const password = /id="new-password">([^<]+)</.exec(reset.shown.body)?.[1];
      assert.ok(password && password.length >= 20);
      assert.doesNotMatch((await get('/console/team', cookie)).body, new RegExp(password), 'shown once');
      assert.equal((await get('/console/orders', here.cookie)).statusCode, 303, 'their sessions ended');
      assert.equal((await signIn(viewer.email, password)).res.statusCode, 303);
      const mine = await act(`/console/team/${owner.id}/reset-password`, cookie, {}, /^\/console\/account$/);
      assert.match(mine.shown.body, /Change your own password here/);

      const disable = await act(`/console/team/${viewer.id}/disable`, cookie, {}, /^\/console\/team$/);
      assert.match(disable.shown.body, /Disabled reset-viewer person/);
      const events = (await listEvents(ctx().db, t.businessId, { after: 0, limit: 100, resourceId: viewer.id })).items;
      assert.deepEqual(
        events.map((e) => e.type),
        ['user.created', 'user.password_changed', 'user.password_reset', 'user.updated'],
      );
      assert.doesNotMatch(JSON.stringify(events), /scrypt|password_hash|a new long password/);
    });

    it('shows orders as a supplier reads them: buyer, their reference, delivery, money by currency, item names, properties, and names for actors', async () => {
      const t = await ctx().createTenant();
      const viewer = await addUser(t, 'viewer', 'orders');
      const f = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, f, {
        externalReference: 'PO-4471',
        notes: 'Ring twice',
        deliveryAddress: '1 Quay St\nSydney',
        properties: { erp: { no: 77 } },
      });
      await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
        as: t,
        body: { order: { properties: { erp: { no: 78 } } } },
      });
      const { cookie } = await signIn(viewer.email, viewer.password);
      const list = (await get('/console/orders', cookie)).body;
      assert.match(list, /Acme Foods/);
      assert.match(list, /PO-4471/);
      assert.match(list, /datetime="2030-01-15T10:30:00.000Z"/);
      assert.match(list, /20\.00 AUD/);
      assert.match(list, /1 order,/);
      const one = (await get(`/console/orders/${order.id}`, cookie)).body;
      assert.match(one, /<td>Widget [0-9.]+<\/td><td>Small<\/td>/);
      assert.match(one, /1 Quay St/);
      assert.match(one, /Ring twice/);
      assert.match(one, /<code>no<\/code>: 78/);
      assert.match(one, /<code>properties\.erp\.no<\/code>: 77 → 78/);
      assert.doesNotMatch(one, /null → null|\(none\) → \(none\)/);
      assert.doesNotMatch(one, /T\d\d:\d\d:\d\d\.\d{3}Z</, 'no raw ISO time as text');
      const empty = (await get('/console/orders?phase=ARCHIVED', cookie)).body;
      assert.match(empty, /No orders match these filters/);
    });
  },
  { config: { webhooks: { ...loadConfig({}).webhooks, workers: false } } },
);
