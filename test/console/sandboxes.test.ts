import assert from 'node:assert/strict';
import { it } from 'node:test';
import { listSandboxes } from '../../src/sandbox/repository.ts';
import { findRun, listRuns } from '../../src/sandbox/runs.ts';
import { runSimulation } from '../../src/sandbox/simulator.ts';
import { listUsers } from '../../src/users/repository.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';
import { createFixture } from '../helpers/orders.ts';

const HOST = 'console.test';
const FORM = { 'content-type': 'application/x-www-form-urlencoded', host: HOST };
const BANNER = /<div class="sandbox-banner" role="status">\s*<strong>Sandbox<\/strong>: Trial\./;

describeEachBackend('console sandboxes', (ctx) => {
  async function signedIn(t: Tenant, role: 'owner' | 'admin') {
    const email = `${role}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const { password } = await createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createUser(c, { email, name: `${role} person`, role }),
    );
    const res = await ctx().app.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: FORM,
      payload: new URLSearchParams({ email, password }).toString(),
    });
    return String(res.headers['set-cookie'] ?? '').split(';')[0];
  }
  const get = (url: string, cookie: string) =>
    ctx().app.inject({ method: 'GET', url, headers: { cookie, host: HOST } });
  async function post(url: string, cookie: string, form: Record<string, string> = {}) {
    const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/console/sandboxes', cookie)).body)?.[1];
    assert.ok(csrf);
    return ctx().app.inject({
      method: 'POST',
      url,
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ ...form, csrf }).toString(),
    });
  }
  const flashOf = (res: { headers: Record<string, unknown> }) =>
    [res.headers['set-cookie']]
      .flat()
      .map(String)
      .find((c) => c.startsWith('sl_flash='))
      ?.split(';')[0];

  it('owners create a sandbox (its test key shown once), everyone switches to it, and every page then says Sandbox', async () => {
    const live = await ctx().createTenant('Console Supplier');
    await createFixture(ctx(), live);
    const owner = await signedIn(live, 'owner');

    const created = await post('/console/sandboxes', owner, { name: 'Trial' });
    assert.equal(created.statusCode, 303);
    const shown = await get('/console/sandboxes', `${owner}; ${flashOf(created)}`);
    const apiKey = /<code id="new-key-value">(sl_test_\w{36})<\/code>/.exec(shown.body)?.[1];
    const sandboxId = /X-Business-Id: (bus_\w+)/.exec(shown.body)?.[1];
    assert.ok(apiKey && sandboxId, shown.body);
    const buyers = await ctx().request('GET', '/api/v1/buyers', {
      headers: { 'x-business-id': sandboxId, 'x-api-key': apiKey },
    });
    assert.equal(buyers.body.items.length, 1);
    const simulated = await ctx().request('POST', '/api/v1/sandbox/simulations/orders', {
      headers: { 'x-business-id': sandboxId, 'x-api-key': apiKey },
      body: {},
    });
    assert.equal(simulated.status, 201);
    const orderId = simulated.body.orders[0].id;

    const admin = await signedIn(live, 'admin');
    assert.equal((await post('/console/sandboxes', admin, { name: 'Not mine' })).statusCode, 403);
    const switched = await post('/console/switch', admin, { businessId: sandboxId });
    assert.equal(switched.statusCode, 303);
    for (const page of [
      '/console/orders',
      '/console/events',
      '/console/webhooks',
      '/console/imports',
      '/console/sandboxes',
      '/console/account',
    ]) {
      const res = await get(page, admin);
      assert.equal(res.statusCode, 200, page);
      assert.match(res.body, BANNER, page);
    }
    assert.match((await get('/console/orders', admin)).body, new RegExp(orderId));
    // The owner's own session still shows the live business, without a banner or the sandbox's order.
    const ownerOrders = await get('/console/orders', owner);
    assert.doesNotMatch(ownerOrders.body, /sandbox-banner/);
    assert.doesNotMatch(ownerOrders.body, new RegExp(orderId));

    assert.equal((await post('/console/switch', admin, { businessId: live.businessId })).statusCode, 303);
    assert.doesNotMatch((await get('/console/orders', admin)).body, /sandbox-banner/);
  });

  it("refuses to switch to another business, or to another business's sandbox", async () => {
    const live = await ctx().createTenant();
    const other = await ctx().createTenant();
    const foreign = await ctx().createSandbox(other);
    const owner = await signedIn(live, 'owner');
    for (const businessId of [other.businessId, foreign.businessId, 'bus_x']) {
      assert.equal((await post('/console/switch', owner, { businessId })).statusCode, 404, businessId);
      assert.doesNotMatch((await get('/console/orders', owner)).body, /sandbox-banner/);
    }
    assert.equal((await get(`/console/sandboxes/${foreign.businessId}/delete`, owner)).statusCode, 404);
    assert.equal((await post(`/console/sandboxes/${foreign.businessId}/delete`, owner)).statusCode, 404);
  });

  it("while a sandbox is shown, Your account and Team act on the user's own business", async () => {
    const live = await ctx().createTenant();
    await createFixture(ctx(), live);
    const sandbox = await ctx().createSandbox(live, 'Trial');
    const email = `owner-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const { password } = await createWriteRunner(ctx().db).run({ businessId: live.businessId, actor: SYSTEM }, (c) =>
      createUser(c, { email, name: 'Owner person', role: 'owner' }),
    );
    const signIn = await ctx().app.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: FORM,
      payload: new URLSearchParams({ email, password }).toString(),
    });
    const owner = String(signIn.headers['set-cookie'] ?? '').split(';')[0];
    assert.equal((await post('/console/switch', owner, { businessId: sandbox.businessId })).statusCode, 303);
    const flashed = async (res: Awaited<ReturnType<typeof post>>, page: string) =>
      (await get(page, `${owner}; ${flashOf(res)}`)).body;

    const changed = await post('/console/account/password', owner, {
      current: password,
      password: 'A-new-password-long-enough-1',
      repeat: 'A-new-password-long-enough-1',
    });
    assert.match(await flashed(changed, '/console/account'), /Your password is changed/);

    const added = await post('/console/team', owner, { email: 'added@example.com', name: 'Added', role: 'viewer' });
    assert.match(await flashed(added, '/console/team'), /Added added@example.com as viewer/);
    const team = await listUsers(ctx().db, live.businessId);
    const addedUser = team.find((u) => u.email === 'added@example.com');
    assert.ok(addedUser, JSON.stringify(team));
    assert.deepEqual(await listUsers(ctx().db, sandbox.businessId), []);
    // Listed on the Team page while the sandbox is shown, as on the live business.
    assert.match((await get('/console/team', owner)).body, /added@example\.com/);

    const noRole = await post(`/console/team/${addedUser.id}`, owner);
    const page = await flashed(noRole, '/console/team');
    assert.doesNotMatch(page, /is now/);
    assert.match(page, /Choose a role/);
  });

  it('owners reset and delete a sandbox after confirming; a session showing it goes back to live', async () => {
    const live = await ctx().createTenant();
    await createFixture(ctx(), live);
    const sandbox = await ctx().createSandbox(live, 'Trial');
    const owner = await signedIn(live, 'owner');
    await ctx().request('POST', '/api/v1/sandbox/simulations/orders', { as: sandbox, body: { count: 2 } });
    assert.match(
      (await get(`/console/sandboxes/${sandbox.businessId}/reset`, owner)).body,
      /Reset the sandbox (&#34;|&quot;|")Trial(&#34;|&quot;|")\?/,
    );
    assert.equal((await post(`/console/sandboxes/${sandbox.businessId}/reset`, owner)).statusCode, 303);
    assert.equal((await ctx().request('GET', '/api/v1/orders', { as: sandbox })).body.items.length, 0);

    assert.equal((await post('/console/switch', owner, { businessId: sandbox.businessId })).statusCode, 303);
    assert.match((await get('/console/orders', owner)).body, BANNER);
    assert.match((await get(`/console/sandboxes/${sandbox.businessId}/delete`, owner)).body, /This cannot be undone/);
    assert.equal((await post(`/console/sandboxes/${sandbox.businessId}/delete`, owner)).statusCode, 303);
    const after = await get('/console/orders', owner);
    assert.equal(after.statusCode, 200);
    assert.doesNotMatch(after.body, /sandbox-banner/);
    assert.deepEqual(await listSandboxes(ctx().db, live.businessId), []);
  });

  it("owners start and stop the sandbox's simulated buyer, which shows its counts and findings to everyone there", async () => {
    const live = await ctx().createTenant();
    await createFixture(ctx(), live);
    const sandbox = await ctx().createSandbox(live, 'Trial');
    const owner = await signedIn(live, 'owner');
    const admin = await signedIn(live, 'admin');
    const onLive = await get('/console/simulation', owner);
    assert.match(onLive.body, /orders in a sandbox only/);
    const refused = await post('/console/simulation', owner, { ordersPerMinute: '60' });
    assert.match((await get('/console/simulation', `${owner}; ${flashOf(refused)}`)).body, /switch to one/);

    for (const cookie of [owner, admin])
      assert.equal((await post('/console/switch', cookie, { businessId: sandbox.businessId })).statusCode, 303);
    assert.match((await get('/console/orders', owner)).body, /href="\/console\/simulation"/);
    const bad = await post('/console/simulation', owner, { ordersPerMinute: '0' });
    assert.match(
      (await get('/console/simulation', `${owner}; ${flashOf(bad)}`)).body,
      /ordersPerMinute: Must be a number from 0.01 \(an order every 100 minutes\) to 6000/,
    );
    assert.equal((await post('/console/simulation', admin, { ordersPerMinute: '60' })).statusCode, 403);
    assert.equal((await post('/console/simulation', owner, { ordersPerMinute: '1', minutes: '' })).statusCode, 303);
    const [run] = await listRuns(ctx().db, sandbox.businessId);
    assert.equal(run.state, 'RUNNING');
    assert.equal(run.total, null);
    const shown = (await get('/console/simulation', admin)).body;
    assert.match(shown, new RegExp(`<code>${run.id}</code>`));
    assert.doesNotMatch(shown, /action="\/console\/simulation\/[^"]+\/stop"/, 'only owners stop');
    assert.match((await get('/console/simulation', owner)).body, new RegExp(`/console/simulation/${run.id}/stop`));
    assert.equal((await post(`/console/simulation/${run.id}/stop`, admin)).statusCode, 403);
    assert.equal((await post(`/console/simulation/${run.id}/stop`, owner)).statusCode, 303);
    assert.equal((await findRun(ctx().db, sandbox.businessId, run.id))!.state, 'STOPPED');
    assert.equal((await post('/console/simulation/sim_nope/stop', owner)).statusCode, 404);

    // A simulated order shipped and then cancelled is a finding on the page.
    const made: string[] = [];
    await runSimulation(ctx().db, sandbox.businessId, {
      writes: createWriteRunner(ctx().db),
      ordersPerMinute: 6000,
      minutes: 1 / 6000,
      random: () => 0.99,
      onChange: ({ order }) => made.push(order.id),
    });
    const order = (await ctx().request('GET', `/api/v1/orders/${made[0]}`, { as: sandbox })).body;
    const lines = order.orderItems.map((i: { id: string; quantity: number }) => ({
      orderItemId: i.id,
      quantity: i.quantity,
    }));
    assert.equal(
      (await ctx().request('POST', `/api/v1/orders/${order.id}/shipments`, { as: sandbox, body: { lines } })).status,
      201,
    );
    await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: sandbox,
      body: { order: { phase: 'CANCELLED' } },
    });
    const findings = (await get('/console/simulation', admin)).body;
    assert.match(findings, /Over-shipped/);
    assert.match(findings, new RegExp(`href="/console/orders/${order.id}"`));
    assert.match(findings, /Cancelled; line 1 shipped/);
  });
});
