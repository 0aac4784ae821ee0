import { AREAS } from '../../src/businesses/scopes.ts';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { accessibilityProblems, launchBrowser, screenshot } from '../helpers/browser.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';
import { startReceiver } from '../helpers/receiver.ts';

// The app's clock, moved forward by the tests that need time to pass (a rotation's grace period).
let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

describeEachBackend(
  'the supplier console, in a browser',
  (ctx) => {
    let browser: Browser;
    let base: string;
    let tenant: Tenant;
    const users: Record<string, { email: string; password: string }> = {};

    before(async () => {
      // Each backend's run starts on the real time: its sign-ins move the clock (signIn).
      offsetMs = 0;
      browser = await launchBrowser();
      await ctx().app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(ctx().app.server.address() as AddressInfo).port}`;
      tenant = await ctx().createTenant('Console Supplier');
      const writes = createWriteRunner(ctx().db);
      for (const role of ['owner', 'admin', 'viewer'] as const) {
        const email = `${role}-${ctx().backend}@example.com`;
        const { password } = await writes.run({ businessId: tenant.businessId, actor: SYSTEM }, (c) =>
          createUser(c, { email, name: `${role[0].toUpperCase()}${role.slice(1)} User`, role }),
        );
        users[role] = { email, password };
      }
    });
    after(async () => {
      await browser?.close();
    });

    async function signIn(role: string, context?: BrowserContext): Promise<Page> {
      // 12 s pass for the app before each sign-in, one account token's refill (5 a minute per account,
      // 20 per address; the throttle is tested in the first test), so that this file's own sign-ins
      // never meet it, however fast the machine runs them. (A whole minute each would put the app's
      // clock past the 5 minutes a webhook receiver allows its signatures.)
      offsetMs += 12_000;
      const page = await (context ?? (await browser.newContext({ viewport: { width: 1280, height: 800 } }))).newPage();
      await page.goto(`${base}/console/sign-in`);
      await page.getByLabel('Email').fill(users[role].email);
      await page.getByLabel('Password').fill(users[role].password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/console\/(keys|webhooks|orders)$/);
      return page;
    }

    const api = (key: string, path = '/api/v1/items') =>
      fetch(`${base}${path}`, { headers: { 'x-business-id': tenant.businessId, 'x-api-key': key } }).then(
        (r) => r.status,
      );

    it('signs in, refuses a wrong password, and throttles guessing', async () => {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      await page.goto(`${base}/console/sign-in`);
      assert.deepEqual(await accessibilityProblems(page), []);
      await screenshot(page, `${ctx().backend}-sign-in`);
      const email = `nobody-${Math.random()}@example.com`;
      for (let i = 0; i < 5; i++) {
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill('wrong password');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByText('Wrong email or password.').waitFor();
      }
      // Five a minute: the sixth is refused, unless a slow machine took over 12 s for the five and
      // the bucket refilled a token; a few more attempts must then meet the limit all the same.
      let refused = false;
      for (let i = 0; i < 4 && !refused; i++) {
        await page.getByLabel('Password').fill('wrong password');
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.url().endsWith('/console/sign-in') && r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Sign in' }).click(),
        ]);
        refused = answer.status() === 429;
      }
      assert.ok(refused, 'guessing is throttled');
      await page.getByText('Too many attempts').waitFor();
      const headers = (await fetch(`${base}/console/sign-in`)).headers;
      assert.match(headers.get('content-security-policy') ?? '', /script-src 'self'.*frame-ancestors 'none'/);
      assert.equal(headers.get('x-frame-options'), 'DENY');
    });

    it('creates a key that the API accepts, shown once, and revoking it is refused by the API within 5 s', async () => {
      const page = await signIn('owner');
      assert.deepEqual(await accessibilityProblems(page), []);
      // The areas a key may use sit on a row of their own under its name, not beside it.
      const [nameBox, areasBox] = await Promise.all([
        page.getByLabel('Name').boundingBox(),
        page.locator('fieldset.scopes').boundingBox(),
      ]);
      assert.ok(
        nameBox && areasBox && areasBox.y >= nameBox.y + nameBox.height,
        `name ${JSON.stringify(nameBox)}, areas ${JSON.stringify(areasBox)}`,
      );
      await page.getByLabel('Name').fill('ERP integration');
      await page.getByLabel('Expires').selectOption('90');
      await page.getByRole('button', { name: 'Create key' }).click();
      const key = (await page.locator('#new-key-value').textContent())!.trim();
      assert.match(key, /^sl_live_[0-9A-Za-z]{36}$/);
      await screenshot(page, `${ctx().backend}-keys`);
      assert.deepEqual(await accessibilityProblems(page), []);
      assert.equal(await api(key), 200);
      // Reloading the page the action led to makes no second key, and no longer shows this one.
      await page.reload();
      assert.equal(await page.locator('#new-key-value').count(), 0, 'the key is shown once');
      assert.equal(await page.locator('tr', { hasText: 'ERP integration' }).count(), 1, 'a reload makes no second key');
      const row = page.locator('tr', { hasText: key.slice(0, 12) });
      await row.getByRole('link', { name: 'Revoke' }).click();
      await page.waitForURL(/\/console\/keys\/[^/]+\/revoke$/);
      assert.equal(await api(key), 200, 'asking revokes nothing');
      await page.getByRole('button', { name: 'Revoke' }).click();
      await page.waitForURL(/\/console\/keys$/);
      await page.getByText('Revoked the key "ERP integration"').waitFor();
      const revokedAt = Date.now();
      while ((await api(key)) !== 401) {
        assert.ok(Date.now() - revokedAt < 5000, 'revoked key still accepted after 5 s');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const events = await fetch(`${base}/api/v1/events?types=api_key.*&limit=1000`, { headers: tenant.headers }).then(
        (r) => r.json() as Promise<any>,
      );
      const mine = events.items.filter((e: any) => e.actor.type === 'user');
      assert.deepEqual(
        mine.slice(-2).map((e: any) => e.type),
        ['api_key.created', 'api_key.revoked'],
      );
      assert.equal(mine.at(-1).actor.name, 'Owner User');
      // Keys are the owners' (and the CLI's) alone.
      const admin = await signIn('admin');
      assert.equal((await admin.goto(`${base}/console/keys`))?.status(), 403);
      assert.equal(await admin.locator('a[href="/console/keys"]').count(), 0);
    });

    it('creates a key limited by the scope matrix, which the API holds it to, and lists what it may do', async () => {
      const page = await signIn('owner');
      await page.getByLabel('Name').fill('Order sync');
      for (const area of AREAS.filter((a) => a !== 'orders'))
        await page.getByLabel(area, { exact: true }).selectOption('none');
      await page.getByLabel('orders', { exact: true }).selectOption('read');
      await page.getByLabel('margin (cost fields)').selectOption('none');
      await page.getByRole('button', { name: 'Create key' }).click();
      const key = (await page.locator('#new-key-value').textContent())!.trim();
      assert.deepEqual(await accessibilityProblems(page), []);
      assert.equal(await api(key, '/api/v1/orders'), 200);
      assert.equal(await api(key, '/api/v1/items'), 403);
      const row = (await page.locator('tr', { hasText: key.slice(0, 12) }).textContent()) ?? '';
      assert.match(row, /orders:read, audit:read/);
      assert.doesNotMatch(row, /margin/);
    });

    it('shows owners the audit trail: key changes with who made them, and refused requests with the key prefix and why', async () => {
      const page = await signIn('owner');
      await page.getByLabel('Name').fill('Fenced');
      await page.getByLabel('Allowed from').fill('203.0.113.0/24');
      await page.getByRole('button', { name: 'Create key' }).click();
      const key = (await page.locator('#new-key-value').textContent())!.trim();
      assert.match((await page.locator('tr', { hasText: key.slice(0, 12) }).textContent()) ?? '', /203\.0\.113\.0\/24/);
      assert.equal(await api(key), 403, 'used from 127.0.0.1, outside its allowlist');
      await page.goto(`${base}/console/audit?kind=request.*`);
      await page.locator('td', { hasText: 'This API key may not be used from' }).first().waitFor();
      assert.deepEqual(await accessibilityProblems(page), []);
      assert.match((await page.locator('tbody tr').first().textContent()) ?? '', new RegExp(key.slice(0, 12)));
      await page.goto(`${base}/console/audit?kind=api_key.created`);
      assert.match((await page.locator('tbody').textContent()) ?? '', /api_key\.created/);
      await screenshot(page, `${ctx().backend}-audit`);
      const admin = await signIn('admin');
      const refused = await admin.goto(`${base}/console/audit`);
      assert.equal(refused?.status(), 403);
    });

    it('rotates with a grace period: both keys work, then the old one is refused once it expires', async () => {
      const page = await signIn('owner');
      await page.getByLabel('Name').fill('Shop sync');
      await page.getByRole('button', { name: 'Create key' }).click();
      const old = (await page.locator('#new-key-value').textContent())!.trim();
      await page.goto(`${base}/console/keys`);
      const row = page.locator('tr', { hasText: old.slice(0, 12) });
      await row.getByLabel('Old key keeps working').selectOption('3600');
      await row.getByRole('button', { name: 'Rotate' }).click();
      const fresh = (await page.locator('#new-key-value').textContent())!.trim();
      assert.notEqual(fresh, old);
      assert.equal(await api(old), 200);
      assert.equal(await api(fresh), 200);
      offsetMs += 3601_000;
      try {
        assert.equal(await api(old), 401);
        assert.equal(await api(fresh), 200);
      } finally {
        offsetMs -= 3601_000;
      }
    });

    it('keeps a viewer away from key management: no link, and 403 on the URL', async () => {
      const page = await signIn('viewer');
      assert.equal(await page.getByRole('link', { name: 'API keys' }).count(), 0);
      const response = await page.goto(`${base}/console/keys`);
      assert.equal(response?.status(), 403);
      assert.deepEqual(await accessibilityProblems(page), []);
    });

    it('refuses a form posted without its CSRF token, and a session cookie never opens the API', async () => {
      const page = await signIn('owner');
      const cookie = (await page.context().cookies()).find((c) => c.name === 'sl_session')!;
      const forged = await fetch(`${base}/console/keys`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `sl_session=${cookie.value}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=Forged',
      });
      assert.equal(forged.status, 403);
      const keys = await page.goto(`${base}/console/keys`);
      assert.ok(!(await keys!.text()).includes('Forged'));
      const viaApi = await fetch(`${base}/api/v1/items`, {
        headers: { cookie: `sl_session=${cookie.value}`, 'x-business-id': tenant.businessId },
      });
      assert.equal(viaApi.status, 401);
      const keyOpensConsole = await fetch(`${base}/console/keys`, { headers: tenant.headers, redirect: 'manual' });
      assert.equal(keyOpensConsole.status, 303);
      assert.match(keyOpensConsole.headers.get('location') ?? '', /sign-in/);
    });

    it('lets the owner add a user, and "sign out everywhere" (offered to every role) ends the other sessions', async () => {
      const first = await signIn('admin');
      const second = await signIn('admin');
      const owner = await signIn('owner');
      await owner.goto(`${base}/console/team`);
      assert.deepEqual(await accessibilityProblems(owner), []);
      await owner.getByLabel('Email').fill(`new-${ctx().backend}@example.com`);
      await owner.getByLabel('Name', { exact: true }).fill('New Person');
      await owner.getByLabel('Role', { exact: true }).selectOption('viewer');
      await owner.getByRole('button', { name: 'Add user' }).click();
      await owner.getByText(`Added new-${ctx().backend}@example.com`).waitFor();
      assert.equal(await owner.locator('#new-password').count(), 1);
      await screenshot(owner, `${ctx().backend}-team`);
      await owner.reload();
      assert.equal(await owner.locator('#new-password').count(), 0, 'the password is shown once');
      assert.equal(
        await owner.locator('tr', { hasText: `new-${ctx().backend}@example.com` }).count(),
        1,
        'a reload adds no one',
      );
      await second.goto(`${base}/console/orders`);
      await second.getByRole('link', { name: 'Sign out everywhere' }).click();
      await second.getByRole('button', { name: 'Sign out everywhere' }).click();
      await second.waitForURL(/sign-in\?signed=everywhere/);
      await second.getByText('You are signed out on every device').waitFor();
      await first.goto(`${base}/console/keys`);
      assert.match(first.url(), /sign-in/);
      // Only that user's sessions: the owner is still signed in.
      await owner.goto(`${base}/console/team`);
      assert.match(owner.url(), /\/console\/team$/);
    });

    it('adds a webhook endpoint for a local receiver, sends a test event, and shows the delivery in the log', async () => {
      const receiver = await startReceiver();
      try {
        const page = await signIn('admin');
        await page.getByRole('link', { name: 'Webhooks' }).click();
        await page.getByLabel('URL').fill(receiver.url);
        await page.getByLabel('Event types').fill('order.*');
        await page.getByRole('button', { name: 'Add endpoint' }).click();
        const secret = (await page.locator('#new-secret-value').textContent())!.trim();
        assert.match(secret, /^whsec_/);
        assert.deepEqual(await accessibilityProblems(page), []);
        await page.getByRole('button', { name: 'Send test event' }).click();
        await page.getByText('A webhook.test event is on its way').waitFor();
        const [got] = await receiver.until((r) => r.length === 1);
        assert.equal(got.event.type, 'webhook.test');
        new Webhook(secret).verify(got.body, got.headers);
        // Three reloads send no more test events.
        for (let i = 0; i < 3; i++) await page.reload();
        const row = page.locator('tr', { hasText: 'webhook.test' });
        await row.getByText('succeeded').waitFor();
        assert.equal(await row.count(), 1, 'one test event, however often the page is reloaded');
        assert.equal(receiver.received.length, 1);
        await screenshot(page, `${ctx().backend}-webhook`);
        assert.deepEqual(await accessibilityProblems(page), []);
        await page.getByLabel('Status').selectOption('paused');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByText('Saved.').waitFor();
        const events = await fetch(`${base}/api/v1/events?types=webhook_endpoint.*&limit=1000`, {
          headers: tenant.headers,
        }).then((r) => r.json() as Promise<any>);
        assert.deepEqual(
          events.items.slice(-2).map((e: any) => [e.type, e.actor.type]),
          [
            ['webhook_endpoint.created', 'user'],
            ['webhook_endpoint.paused', 'user'],
          ],
        );
      } finally {
        await receiver.close();
      }
    });

    it("filters orders by a property path, and shows an order's history after a PATCH made through the API", async () => {
      const fixture = await createFixture(ctx(), tenant);
      const synced = await createOrder(ctx(), tenant, fixture, { properties: { erp: { no: 77 } } });
      const unsynced = await createOrder(ctx(), tenant, fixture);
      await patchOrder(ctx(), tenant, unsynced.id, { order: { notes: 'Leave at the back door' } });
      const page = await signIn('viewer');
      await page.getByLabel('Property path').fill('erp.no');
      await page.getByLabel('Exists').selectOption('false');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/propertyExists=false/);
      assert.equal(await page.getByRole('link', { name: unsynced.internalReference }).count(), 1);
      assert.equal(await page.getByRole('link', { name: synced.internalReference }).count(), 0);
      assert.deepEqual(await accessibilityProblems(page), []);
      await screenshot(page, `${ctx().backend}-orders`);
      await page.getByRole('link', { name: unsynced.internalReference }).click();
      await page.getByText('order.updated').waitFor();
      await page.locator('dd', { hasText: 'Leave at the back door' }).waitFor();
      assert.deepEqual(await accessibilityProblems(page), []);
      await screenshot(page, `${ctx().backend}-order`);
      await page.getByRole('link', { name: 'Events' }).click();
      await page.getByRole('cell', { name: 'order.updated' }).first().waitFor();
      assert.deepEqual(await accessibilityProblems(page), []);
      await screenshot(page, `${ctx().backend}-events`);
    });

    it('lays out every page at 375 and 1280 px: no sideways scroll, no axe violation, no console error', async () => {
      const fixture = await createFixture(ctx(), tenant);
      const order = await createOrder(ctx(), tenant, fixture, {
        externalReference: 'PO-9001',
        properties: { erp: { no: 12, lines: ['a', 'b'] } },
      });
      const hook = await ctx().request('POST', '/api/v1/webhook-endpoints', {
        as: tenant,
        body: {
          url: 'https://hooks.example.com/a-rather-long-path/for/the/layout/check',
          description: 'Layout check',
          eventTypes: ['buyer.updated'],
        },
      });
      assert.equal(hook.status, 201);
      const shipped = await createOrder(ctx(), tenant, fixture, {
        orderItems: [
          { itemVariantId: fixture.variantIds[0], quantity: 50 },
          { itemVariantId: fixture.variantIds[1], quantity: 10 },
        ],
      });
      const [a, b] = shipped.orderItems.map((i: { id: string }) => i.id);
      assert.equal(
        (
          await ctx().request('POST', `/api/v1/orders/${shipped.id}/acknowledgements`, {
            as: tenant,
            body: { lines: [{ orderItemId: b, decision: 'BACKORDERED', expectedAt: '2030-02-01T00:00:00Z' }] },
          })
        ).status,
        201,
      );
      const shipment = await ctx().request('POST', `/api/v1/orders/${shipped.id}/shipments`, {
        as: tenant,
        body: {
          carrier: { name: 'UPS', scac: 'UPSN' },
          trackingNumbers: ['1Z999AA10123456784', '1Z999AA10123456785'],
          externalReference: 'ASN-2030-000123',
          packages: [
            {
              sscc: '000123456000000012',
              weight: { value: 12.5, unit: 'kg' },
              dimensions: { length: 40, width: 30, height: 20, unit: 'cm' },
              lines: [{ orderItemId: a, quantity: 30 }],
            },
          ],
        },
      });
      assert.equal(shipment.status, 201, JSON.stringify(shipment.body));
      const viewer = await ctx()
        .db.selectFrom('users')
        .select('id')
        .where('email', '=', users.viewer.email)
        .executeTakeFirstOrThrow();
      const pages: Record<string, string> = {
        keys: '/console/keys',
        'key-revoke': `/console/keys/${tenant.keyId}/revoke`,
        webhooks: '/console/webhooks',
        'webhook-page': `/console/webhooks/${hook.body.id}`,
        'webhook-disable': `/console/webhooks/${hook.body.id}/disable`,
        'orders-list': '/console/orders',
        'order-page': `/console/orders/${order.id}`,
        'order-shipped': `/console/orders/${shipped.id}`,
        shipments: '/console/shipments',
        'events-feed': '/console/events',
        imports: '/console/imports',
        'team-page': '/console/team',
        'team-reset': `/console/team/${viewer.id}/reset-password`,
        'audit-trail': '/console/audit',
        account: '/console/account',
        'sign-out-everywhere': '/console/sign-out-everywhere',
        'not-found': '/console/no/such/page',
      };
      const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
      const signedOut = await (await browser.newContext({ viewport: { width: 375, height: 740 } })).newPage();
      const page = await signIn('owner', context);
      const errors: string[] = [];
      for (const p of [page, signedOut]) {
        p.on('console', (m) => {
          if (m.type() === 'error' && !m.location().url.endsWith('/no/such/page'))
            errors.push(`${m.text()} at ${m.location().url}`);
        });
        p.on('pageerror', (e) => errors.push(e.message));
        p.on('response', (r) => {
          if (r.status() >= 400 && !r.url().endsWith('/no/such/page')) errors.push(`${r.status()} ${r.url()}`);
        });
      }
      const check = async (p: Page, name: string, width: number) => {
        const { scroll, client, wide } = await p.evaluate(() => {
          const doc = (globalThis as any).document;
          const limit: number = doc.documentElement.clientWidth;
          // The outermost elements that stick out, to name in a failure.
          const out = [...doc.body.querySelectorAll('*')].filter(
            (e: any) =>
              e.getBoundingClientRect().right > limit + 0.5 &&
              !(e.parentElement && e.parentElement.getBoundingClientRect().right > limit + 0.5),
          );
          return {
            scroll: doc.documentElement.scrollWidth as number,
            client: limit,
            wide: out.slice(0, 3).map((e: any) => `${e.tagName.toLowerCase()}.${e.className}`) as string[],
          };
        });
        assert.ok(scroll <= client, `${name} at ${width} px is ${scroll} px wide: ${wide.join(', ')}`);
        assert.deepEqual(await accessibilityProblems(p), [], `${name} at ${width} px`);
        await screenshot(p, `${ctx().backend}-${name}-${width}`, { fullPage: true });
      };
      for (const width of [375, 1280]) {
        await page.setViewportSize({ width, height: width === 375 ? 740 : 800 });
        await signedOut.setViewportSize({ width, height: width === 375 ? 740 : 800 });
        await signedOut.goto(`${base}/console/sign-in`);
        await check(signedOut, 'sign-in', width);
        for (const [name, path] of Object.entries(pages)) {
          const response = await page.goto(`${base}${path}`);
          assert.equal(response?.status(), name === 'not-found' ? 404 : 200, `${path}`);
          await check(page, name, width);
        }
      }
      // Times read in the viewer's zone once the script has run; the exact UTC time stays on hover.
      await page.goto(`${base}/console/orders/${order.id}`);
      const time = page.locator('time').first();
      assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      assert.doesNotMatch((await time.textContent()) ?? '', /UTC$/, 'rewritten by console.js');
      assert.deepEqual(errors, []);
      await context.close();
      await signedOut.context().close();
    });

    it('makes a sandbox, switches to it, and runs the simulated buyer there until its minutes end, with its counts', async () => {
      await createFixture(ctx(), tenant);
      const page = await signIn('owner');
      await page.goto(`${base}/console/sandboxes`);
      await page.getByLabel('Name').fill('Browser trial');
      await page.getByRole('button', { name: 'Create a sandbox' }).click();
      await page.getByText('Its test key: copy it now').waitFor();
      await page
        .getByRole('row', { name: /Browser trial/ })
        .getByRole('button', { name: 'Switch' })
        .click();
      await page.getByRole('link', { name: 'Simulated buyer' }).click();
      // 600 a minute for 0.01 minutes: 6 orders, a tenth of a second apart, made by the app's own worker.
      await page.getByLabel('Orders a minute').fill('600');
      await page.getByLabel('Minutes').fill('0.01');
      await page.getByRole('button', { name: 'Start a simulation' }).click();
      await page.getByText(/^Started simulation sim_/).waitFor();
      for (let tries = 0; tries < 100 && !(await page.getByText('FINISHED').isVisible()); tries++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await page.reload();
      }
      const row = page.getByRole('row', { name: /FINISHED/ });
      assert.match((await row.textContent()) ?? '', /6 of 6/);
      assert.deepEqual(await accessibilityProblems(page), []);
      await screenshot(page, `${ctx().backend}-simulation`);
      await page.context().close();
    });
  },
  { clock, config: { webhooks: { ...loadConfig({}).webhooks, allowPrivateNetworks: true } } },
);
