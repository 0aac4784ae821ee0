import {
  LIVE_KEY_ON_SANDBOX_HINT,
  MALFORMED_KEY_HINT,
  TEST_KEY_ON_LIVE_HINT,
  UNAUTHORIZED_HINT,
} from '../../src/lib/errors.ts';
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Tenant, TestContext } from './context.ts';

export interface SecurityCase {
  method: string;
  /** Builds a URL to a resource that `owner` owns (creating it if needed). */
  url: (ctx: TestContext, owner: Tenant) => Promise<string> | string;
  body?: unknown;
  /** False for collection routes, where there is no other tenant's resource to reach. */
  crossTenant?: boolean;
}

export function assertUnauthorized(
  response: { status: number; body: any; headers: Record<string, unknown> },
  hint?: string,
) {
  assert.equal(response.status, 401);
  assert.deepEqual(Object.keys(response.body).sort(), ['error', 'errorCode', 'hint', 'message', 'requestId']);
  assert.equal(response.body.errorCode, 'UNAUTHORIZED');
  assert.equal(response.body.message, 'Unauthorized');
  // The same hint for every failure: it names the headers, never which check failed; a key that
  // cannot be one (its format, which anyone can check offline) is told so, and so is a real key of
  // the other mode (a test key on a live business, a live key on a sandbox).
  if (hint) assert.equal(response.body.hint, hint);
  else
    assert.ok(
      [UNAUTHORIZED_HINT, MALFORMED_KEY_HINT, TEST_KEY_ON_LIVE_HINT, LIVE_KEY_ON_SANDBOX_HINT].includes(
        response.body.hint,
      ),
      response.body.hint,
    );
  assert.equal(response.body.requestId, response.headers['x-request-id']);
}

/**
 * The same cases for every route: no key, wrong key, revoked key, a key of the other mode (a test
 * key on its live business, a live key on its sandbox), another tenant's resource (the business's
 * own sandbox's too).
 */
export function securityCases(ctx: () => TestContext, spec: SecurityCase): void {
  const name = `${spec.method}`;
  it(`${name}: no credentials gives 401`, async () => {
    const owner = await ctx().createTenant();
    const url = await spec.url(ctx(), owner);
    assertUnauthorized(await ctx().request(spec.method, url, { body: spec.body }));
    assertUnauthorized(
      await ctx().request(spec.method, url, { body: spec.body, headers: { 'x-business-id': owner.businessId } }),
    );
  });

  it(`${name}: a wrong key, or a key of another business, gives 401`, async () => {
    const owner = await ctx().createTenant();
    const other = await ctx().createTenant();
    const url = await spec.url(ctx(), owner);
    const wrong = { 'x-business-id': owner.businessId, 'x-api-key': '0'.repeat(32) };
    assertUnauthorized(await ctx().request(spec.method, url, { body: spec.body, headers: wrong }));
    const crossed = { 'x-business-id': owner.businessId, 'x-api-key': other.apiKey };
    assertUnauthorized(await ctx().request(spec.method, url, { body: spec.body, headers: crossed }));
  });

  it(`${name}: a revoked key gives 401`, async () => {
    const owner = await ctx().createTenant();
    const url = await spec.url(ctx(), owner);
    const spare = await ctx().addKey(owner);
    await ctx().revokeKey(owner, spare.keyId);
    assertUnauthorized(await ctx().request(spec.method, url, { as: spare, body: spec.body }));
  });

  it(`${name}: a test key on its live business, or a live key on its sandbox, gives 401 saying which`, async () => {
    const owner = await ctx().createTenant();
    const url = await spec.url(ctx(), owner);
    const sandbox = await ctx().createSandbox(owner);
    const testOnLive = await ctx().request(spec.method, url, {
      body: spec.body,
      headers: { 'x-business-id': owner.businessId, 'x-api-key': sandbox.apiKey },
    });
    assertUnauthorized(testOnLive, TEST_KEY_ON_LIVE_HINT);
    assert.equal(testOnLive.headers['supplyline-sandbox'], 'true');
    const liveOnSandbox = await ctx().request(spec.method, url, {
      body: spec.body,
      headers: { 'x-business-id': sandbox.businessId, 'x-api-key': owner.apiKey },
    });
    assertUnauthorized(liveOnSandbox, LIVE_KEY_ON_SANDBOX_HINT);
    assert.equal(liveOnSandbox.headers['supplyline-sandbox'], undefined);
  });

  if (spec.crossTenant === false) return;
  it(`${name}: another business's resource is a 404, never its data`, async () => {
    const owner = await ctx().createTenant();
    const intruder = await ctx().createTenant();
    const url = await spec.url(ctx(), owner);
    const response = await ctx().request(spec.method, url, { as: intruder, body: spec.body });
    assert.equal(response.status, 404);
    assert.equal(response.body.errorCode, 'NOT_FOUND');
    assert.ok(!JSON.stringify(response.body).includes(owner.businessId));
    // The business's own sandbox holds copies under ids of their own: the live resource is not there.
    const sandbox = await ctx().createSandbox(owner);
    const fromSandbox = await ctx().request(spec.method, url, { as: sandbox, body: spec.body });
    assert.equal(fromSandbox.status, 404, JSON.stringify(fromSandbox.body));
    assert.equal(fromSandbox.headers['supplyline-sandbox'], 'true');
  });
}
