import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createSession, SESSION_COOKIE } from '../../src/console/session.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { importNow } from '../helpers/imports.ts';

const HOST = 'console.test';

/** A signed-in user of `role`, without the sign-in form. */
async function cookieOf(ctx: TestContext, t: Tenant, role: 'owner' | 'viewer'): Promise<string> {
  const { user } = await createWriteRunner(ctx.db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
    createUser(c, { email: `${role}-${Math.random().toString(36).slice(2)}@example.com`, name: role, role }),
  );
  return `${SESSION_COOKIE}=${await createSession(ctx.db, { id: user.id, business_id: t.businessId }, Date.now())}`;
}

/** The console's imports page (issue 47): every import with its progress and counts, and its results to download. */
describeEachBackend("the console's imports", (ctx) => {
  it("lists imports with progress and counts, and downloads each one's results, to every role", async () => {
    const t = await ctx().createTenant();
    const imported = await importNow(ctx(), t, [
      { op: 'create', resource: 'buyer', ref: 'a', data: { buyer: { name: 'Imported buyer' } } },
      { op: 'create', resource: 'buyer', ref: 'b', data: { buyer: {} } },
    ]);
    const viewer = await cookieOf(ctx(), t, 'viewer');
    const list = await ctx().app.inject({
      method: 'GET',
      url: '/console/imports',
      headers: { host: HOST, cookie: viewer },
    });
    assert.equal(list.statusCode, 200);
    const row = list.body.slice(list.body.indexOf(imported.id));
    assert.match(row, /COMPLETED/);
    assert.match(row, /<progress max="2" value="2"/);
    assert.match(row, /<td>1<\/td><td>0<\/td><td>0<\/td><td>1<\/td>/, 'created, updated, unchanged, failed');
    assert.match(row, new RegExp(`href="/console/imports/${imported.id}/results" download`));
    assert.match(list.body, /aria-current="page">Imports</);

    const results = await ctx().app.inject({
      method: 'GET',
      url: `/console/imports/${imported.id}/results`,
      headers: { host: HOST, cookie: viewer },
    });
    assert.equal(results.statusCode, 200);
    assert.match(
      String(results.headers['content-disposition']),
      new RegExp(`attachment; filename="${imported.id}-results.ndjson"`),
    );
    const parsed = results.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      parsed.map((r) => [r.line, r.ref, r.outcome]),
      [
        [1, 'a', 'created'],
        [2, 'b', 'failed'],
      ],
    );
    assert.equal(parsed[1].error.fieldErrors['buyer.name'], 'Required');

    const signedOut = await ctx().app.inject({ method: 'GET', url: '/console/imports', headers: { host: HOST } });
    assert.equal(signedOut.statusCode, 303);
  });
});
