import assert from 'node:assert/strict';
import { it } from 'node:test';
import { AREAS, requiredScopes, SCOPES, type Scope } from '../../src/businesses/scopes.ts';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * Restricted keys (issue 46, first part): every operation of /openapi.json, generated from the
 * route table, is called with keys of every scope level of its area and of another area. Only the
 * scope it declares (or the write scope of its area, for a read) passes; the others answer 403
 * FORBIDDEN naming the scope. A key made without scopes, as every earlier key, passes everywhere.
 */
describeEachBackend('API key scopes', (ctx) => {
  it('lets each operation through only with the scope its document declares, on every route', async () => {
    const live = await ctx().createTenant();
    // Sandbox-only operations are asked of a sandbox: a live key gets 403 there whatever its scopes.
    const sandbox = await ctx().createSandbox(live);
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    const keys = new Map<string, Awaited<ReturnType<ReturnType<typeof ctx>['addKey']>>>();
    let owner = live;
    const keyFor = async (scopes: Scope[]) => {
      const name = `${owner.businessId} ${scopes.join(',')}`;
      if (!keys.has(name)) keys.set(name, await ctx().addKey(owner, scopes));
      return keys.get(name)!;
    };
    let operations = 0;
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/api/v1/')) continue;
      for (const [method, op] of Object.entries<any>(ops)) {
        operations++;
        owner = op['x-supplyline-sandbox-only'] === true ? sandbox : live;
        const declared: Scope[] = op.security?.[0]?.ApiKey ?? [];
        const route = path.replace(/\{(\w+)\}/g, ':$1');
        assert.deepEqual(
          declared,
          requiredScopes(method.toUpperCase(), route),
          `${method} ${path} declares the scopes it needs`,
        );
        const [main, ...also] = declared;
        const [area, level] = main.split(':');
        const url = path.replace(/\{(\w+)\}/g, 'x_missing');
        const call = async (scopes: Scope[] | null) => {
          const as = scopes === null ? owner : await keyFor(scopes);
          return ctx().request(method.toUpperCase(), url, {
            as,
            body: method === 'get' || method === 'delete' ? undefined : {},
          });
        };
        const other = AREAS.find((a) => a !== area && !also.some((s) => s.startsWith(`${a}:`)))!;
        // [the key's scopes, passes, the scope the 403 names]
        const cases: Array<[Scope[] | null, boolean, Scope?]> = [
          [null, true],
          [declared, true],
          ...(SCOPES.includes(`${area}:write` as Scope)
            ? [[[`${area}:write` as Scope, ...also], true] as [Scope[], boolean]]
            : []),
          [[`${other}:write` as Scope, ...also], false, main],
          ...(level === 'write'
            ? [[[`${area}:read` as Scope, ...also], false, main] as [Scope[], boolean, Scope]]
            : []),
          // Each further scope is needed too: without it, the 403 names it.
          ...also.map((s) => [[main], false, s] as [Scope[], boolean, Scope]),
        ];
        for (const [scopes, passes, named] of cases) {
          const res = await call(scopes);
          const label = `${method.toUpperCase()} ${path} with ${scopes ? scopes.join(',') : 'every scope'}: ${res.status} ${String(JSON.stringify(res.body)).slice(0, 200)}`;
          if (passes) assert.notEqual(res.status, 403, label);
          else {
            assert.equal(res.status, 403, label);
            assert.deepEqual(
              [res.body.errorCode, res.body.message],
              ['FORBIDDEN', `This API key lacks the scope ${named}`],
              label,
            );
          }
        }
      }
    }
    assert.ok(operations >= 40, `${operations} operations`);
  });

  it('lets only a key that may read the events write webhook endpoints: an endpoint receives them', () => {
    assert.deepEqual(requiredScopes('POST', '/api/v1/webhook-endpoints'), ['webhooks:write', 'events:read']);
    assert.deepEqual(requiredScopes('POST', '/api/v1/webhook-endpoints/:id/replay'), ['webhooks:write', 'events:read']);
    assert.deepEqual(requiredScopes('GET', '/api/v1/webhook-endpoints/:id/deliveries'), ['webhooks:read']);
    assert.deepEqual(requiredScopes('GET', '/health'), []);
  });

  it("keeps a rotated key's scopes and expiry, never extends the old key's life, and refuses an unknown scope at the CLI", async () => {
    const { parseScopes } = await import('../../src/businesses/scopes.ts');
    assert.deepEqual(parseScopes('orders:write, items:read,orders:write'), ['orders:write', 'items:read']);
    assert.throws(() => parseScopes('orders:admin'), /Unknown scope orders:admin/);
    assert.throws(() => parseScopes(''), /at least one scope/);
    const owner = await ctx().createTenant();
    const limited = await ctx().addKey(owner, ['items:read']);
    const { createWriteRunner, SYSTEM } = await import('../../src/write/runner.ts');
    const { rotateApiKey } = await import('../../src/businesses/service.ts');
    const rotated = await createWriteRunner(ctx().db).run({ businessId: owner.businessId, actor: SYSTEM }, (c) =>
      rotateApiKey(c, limited.keyId!, 0),
    );
    const headers = { 'x-business-id': owner.businessId, 'x-api-key': rotated!.apiKey };
    assert.equal((await ctx().app.inject({ method: 'GET', url: '/api/v1/items', headers })).statusCode, 200);
    assert.equal((await ctx().app.inject({ method: 'GET', url: '/api/v1/orders', headers })).statusCode, 403);

    // A key that expires in an hour, rotated with a day's grace: the new key expires when it would
    // have, and the old one no later.
    const { createApiKey } = await import('../../src/businesses/service.ts');
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const runner = createWriteRunner(ctx().db);
    const expiring = await runner.run({ businessId: owner.businessId, actor: SYSTEM }, (c) =>
      createApiKey(c, { expiresAt: inAnHour }),
    );
    const next = await runner.run({ businessId: owner.businessId, actor: SYSTEM }, (c) =>
      rotateApiKey(c, expiring.keyId, 86_400),
    );
    const { listApiKeys } = await import('../../src/businesses/repository.ts');
    const listed = await listApiKeys(ctx().db, owner.businessId);
    assert.equal(listed.find((k) => k.id === next!.keyId)!.expiresAt, inAnHour);
    assert.equal(listed.find((k) => k.id === expiring.keyId)!.expiresAt, inAnHour);

    // Rotating a key again in its grace (a form sent twice) would make a second successor that
    // expires when the grace ends: it is refused, naming the successor to rotate instead.
    const lasting = await runner.run({ businessId: owner.businessId, actor: SYSTEM }, (c) => createApiKey(c, {}));
    const successor = await runner.run({ businessId: owner.businessId, actor: SYSTEM }, (c) =>
      rotateApiKey(c, lasting.keyId, 3_600),
    );
    await assert.rejects(
      runner.run({ businessId: owner.businessId, actor: SYSTEM }, (c) => rotateApiKey(c, lasting.keyId, 3_600)),
      (error: any) =>
        error.status === 409 &&
        error.message === `This key was already rotated: rotate its successor (${successor!.keyId}) instead`,
    );
    const after = await listApiKeys(ctx().db, owner.businessId);
    assert.equal(after.length, listed.length + 2, 'one successor only');
    assert.equal(after.find((k) => k.id === successor!.keyId)!.expiresAt, null);
  });
});
