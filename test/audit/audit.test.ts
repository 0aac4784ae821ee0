import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUDIT_RETENTION_DAYS, purgeAuditEventsBefore, RefusalSampler } from '../../src/log/audit.ts';
import { parseCidrs } from '../../src/businesses/allowlist.ts';
import { newApiKey } from '../../src/businesses/key-format.ts';
import { createApiKey, revokeApiKey, rotateApiKey, setKeyAllowlist } from '../../src/businesses/service.ts';
import { createUser, updateUser } from '../../src/users/service.ts';
import { CLI, createWriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';

const trail = async (c: TestContext, as: Tenant, query = '') => {
  const res = await c.request('GET', `/api/v1/audit-events?limit=100${query}`, { as });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.items as any[];
};

/** Refusals are recorded after their answer is sent: wait for them. */
async function eventually(read: () => Promise<any[]>, done: (items: any[]) => boolean): Promise<any[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const items = await read();
    if (done(items) || Date.now() > deadline) return items;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The audit trail (issue 46): every change to keys (their scopes and allowlists), users (their
 * roles) and webhook endpoints, in the write's own transaction; every refused request (401, 403)
 * with who, which key prefix, address, request id, path and why; served to audit:read keys, kept
 * 400 days, never the key itself.
 */
describe('the refusals recorded', () => {
  it("are a business's first 60 of a minute; the first one after says how many were left out", () => {
    let now = 0;
    const sampler = new RefusalSampler(() => now);
    const taken = Array.from({ length: 65 }, () => sampler.take('bus_a', 'Unknown key'));
    assert.equal(taken.filter((r) => r !== null).length, 60);
    assert.equal(sampler.take('bus_b', 'Unknown key'), 'Unknown key', 'another business has its own');
    now += 59_999;
    assert.equal(sampler.take('bus_a', 'Unknown key'), null);
    now += 1;
    assert.equal(sampler.take('bus_a', 'Unknown key'), 'Unknown key (6 more refused before it were not recorded)');
    assert.equal(sampler.take('bus_a', 'Unknown key'), 'Unknown key');
  });
});

describeEachBackend('the audit trail', (ctx) => {
  it('records every change to keys, users and webhook endpoints, with who made it, in the write that made it', async () => {
    const owner = await ctx().createTenant();
    const writes = createWriteRunner(ctx().db);
    const as = { businessId: owner.businessId, actor: CLI };
    const made = await writes.run(as, (c) => createApiKey(c, { name: 'ERP', scopes: ['orders:read'] }));
    await writes.run(as, (c) => setKeyAllowlist(c, made.keyId, parseCidrs('10.0.0.0/8')));
    const rotated = await writes.run(as, (c) => rotateApiKey(c, made.keyId, 0));
    await writes.run(as, (c) => revokeApiKey(c, rotated!.keyId));
    const user = await writes.run(as, (c) =>
      createUser(c, { email: `ana-${Math.random()}@example.com`, name: 'Ana', role: 'viewer' }),
    );
    await writes.run(as, (c) => updateUser(c, user.user.id, { role: 'admin' }));
    const endpoint = await ctx().request('POST', '/api/v1/webhook-endpoints', {
      as: owner,
      body: { url: 'https://example.com/hook' },
    });
    await ctx().request('PATCH', `/api/v1/webhook-endpoints/${endpoint.body.id}`, {
      as: owner,
      body: { status: 'paused' },
    });
    await ctx().request('DELETE', `/api/v1/webhook-endpoints/${endpoint.body.id}`, { as: owner });

    const items = (await trail(ctx(), owner)).reverse();
    // The first: the business's own first key.
    assert.deepEqual(
      items.map((e) => e.kind),
      [
        'api_key.created',
        'api_key.created',
        'api_key.updated',
        'api_key.created',
        'api_key.updated',
        'api_key.revoked',
        'user.created',
        'user.updated',
        'webhook_endpoint.created',
        'webhook_endpoint.paused',
        'webhook_endpoint.deleted',
      ],
    );
    assert.deepEqual(items[2].detail.changes.allowedCidrs, { from: null, to: ['10.0.0.0/8'] });
    assert.deepEqual(items[7].detail.changes.role, { from: 'viewer', to: 'admin' });
    assert.deepEqual(items[1].actor, { type: 'system', id: 'cli' });
    assert.deepEqual(items[8].actor, { type: 'api_key', id: owner.keyId });
    assert.equal(items[8].subjectId, endpoint.body.id);
    assert.ok(!JSON.stringify(items).includes(endpoint.body.secret), 'never a webhook secret');
    assert.ok(!JSON.stringify(items).includes(rotated!.apiKey), 'never a key');

    // Filters: by kind, by a resource's kinds, by key (what it did and what was done to it), by time.
    assert.equal((await trail(ctx(), owner, '&kind=api_key.revoked')).length, 1);
    assert.equal((await trail(ctx(), owner, '&kind=user.*')).length, 2);
    assert.equal((await trail(ctx(), owner, `&keyId=${made.keyId}`)).length, 3);
    assert.equal((await trail(ctx(), owner, '&kind=api_key.*')).length, 6);
    assert.deepEqual(
      (await trail(ctx(), owner, `&keyId=${owner.keyId}`)).map((e) => e.kind),
      ['webhook_endpoint.deleted', 'webhook_endpoint.paused', 'webhook_endpoint.created', 'api_key.created'],
    );
    assert.equal((await trail(ctx(), owner, `&until=${items[0].occurredAt}`)).length, 0);
    assert.equal((await trail(ctx(), owner, `&since=${items.at(-1).occurredAt}`)).length, 1);
    // The same instants written other ways RFC 3339 allows: an offset, lower-case t and z.
    const tenHoursAhead = (iso: string) =>
      encodeURIComponent(new Date(Date.parse(iso) + 36_000_000).toISOString().replace('Z', '+10:00'));
    assert.equal((await trail(ctx(), owner, `&since=${tenHoursAhead(items.at(-1).occurredAt)}`)).length, 1);
    assert.equal((await trail(ctx(), owner, `&since=${items.at(-1).occurredAt.toLowerCase()}`)).length, 1);
    assert.equal((await trail(ctx(), owner, `&until=${tenHoursAhead(items[0].occurredAt)}`)).length, 0);
    // Pages by cursor, like every list.
    const first = await ctx().request('GET', '/api/v1/audit-events?limit=4', { as: owner });
    const second = await ctx().request(
      'GET',
      `/api/v1/audit-events?limit=4&cursor=${encodeURIComponent(first.body.nextCursor)}`,
      { as: owner },
    );
    assert.deepEqual(
      [...first.body.items, ...second.body.items].map((e: any) => e.id),
      items
        .reverse()
        .slice(0, 8)
        .map((e) => e.id),
    );
  });

  it('records every refused request with its key prefix, address, request id, path and reason, never the key, and only for a business that exists', async () => {
    const owner = await ctx().createTenant();
    const narrow = await ctx().addKey(owner, ['items:read']);
    const wrongKey = newApiKey();
    const wrong = await ctx().app.inject({
      method: 'GET',
      url: '/api/v1/orders?page=1',
      remoteAddress: '203.0.113.9',
      headers: { 'x-business-id': owner.businessId, 'x-api-key': wrongKey, 'x-request-id': 'probe-1' },
    });
    assert.equal(wrong.statusCode, 401);
    const forbidden = await ctx().request('GET', '/api/v1/orders', {
      as: narrow,
      headers: { 'x-request-id': 'probe-2' },
    });
    assert.equal(forbidden.status, 403);
    await ctx().request('GET', '/api/v1/orders', {
      headers: { 'x-business-id': 'bus_doesnotexist', 'x-api-key': wrongKey },
    });

    const items = await eventually(
      () => trail(ctx(), owner, '&kind=request.*'),
      (i) => i.length >= 2,
    );
    const byRequest = new Map(items.map((e) => [e.requestId, e]));
    const refused = byRequest.get('probe-1');
    assert.deepEqual(
      [
        refused.kind,
        refused.keyPrefix,
        refused.address,
        refused.method,
        refused.path,
        refused.reason,
        refused.actor.id,
      ],
      [
        'request.unauthorized',
        wrongKey.slice(0, 12),
        '203.0.113.9',
        'GET',
        '/api/v1/orders',
        'Unknown, revoked or expired key, or a key of another business',
        null,
      ],
    );
    const denied = byRequest.get('probe-2');
    assert.deepEqual(
      [denied.kind, denied.actor.id, denied.reason],
      ['request.forbidden', narrow.keyId, 'This API key lacks the scope orders:read'],
    );
    const rows = await ctx().db.selectFrom('audit_events').selectAll().execute();
    assert.ok(!JSON.stringify(rows).includes(wrongKey.slice(12)), 'never more of a key than its prefix');
    assert.equal(rows.filter((r) => r.business_id === 'bus_doesnotexist').length, 0);
  });

  it('records at most 60 refusals of a business a minute on an instance, then says how many it left out, so strangers cannot flood a trail', async () => {
    const owner = await ctx().createTenant();
    const junk = { 'x-business-id': owner.businessId, 'x-api-key': 'sl_live_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE00' };
    const rows = () =>
      ctx()
        .db.selectFrom('audit_events')
        .select(['reason', 'request_id'])
        .where('business_id', '=', owner.businessId)
        .where('kind', '=', 'request.unauthorized')
        .orderBy('created_at')
        .execute();
    for (let i = 0; i < 70; i++) {
      const res = await ctx().app.inject({
        method: 'GET',
        url: '/api/v1/orders',
        headers: { ...junk, 'x-request-id': `flood-${i}` },
      });
      assert.equal(res.statusCode, 401);
    }
    const recorded = await eventually(rows, (r) => r.length >= 60);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The first 60 only; rows of one millisecond have no order between them, so compared as a set.
    assert.deepEqual(
      (await rows()).map((r) => r.request_id).sort(),
      Array.from({ length: 60 }, (_, i) => `flood-${i}`).sort(),
    );
    assert.ok(recorded.length >= 60);
  });

  it("serves the trail to a key with audit:read only, and never another business's", async () => {
    const owner = await ctx().createTenant();
    const other = await ctx().createTenant();
    await ctx().request('POST', '/api/v1/webhook-endpoints', { as: other, body: { url: 'https://example.com/other' } });
    const auditor = await ctx().addKey(owner, ['audit:read']);
    const everythingElse = await ctx().addKey(owner, ['orders:write', 'items:write', 'webhooks:write', 'margin:write']);
    assert.equal((await ctx().request('GET', '/api/v1/audit-events', { as: everythingElse })).status, 403);
    const seen = await trail(ctx(), auditor);
    assert.ok(
      seen.every((e) => e.kind.startsWith('api_key.') || e.kind.startsWith('request.')),
      JSON.stringify(seen.map((e) => e.kind)),
    );
    assert.ok(!JSON.stringify(seen).includes('example.com/other'));
  });

  it('keeps 400 days: the retention job deletes what is older', async () => {
    assert.equal(AUDIT_RETENTION_DAYS, 400);
    const owner = await ctx().createTenant();
    await ctx().request('POST', '/api/v1/webhook-endpoints', { as: owner, body: { url: 'https://example.com/hook' } });
    const rows = () =>
      ctx().db.selectFrom('audit_events').select('id').where('business_id', '=', owner.businessId).execute();
    const before = (await rows()).length;
    await ctx()
      .db.updateTable('audit_events')
      .set({ created_at: new Date(Date.now() - 401 * 86_400_000).toISOString() })
      .where('business_id', '=', owner.businessId)
      .where('kind', '=', 'webhook_endpoint.created')
      .execute();
    await purgeAuditEventsBefore(ctx().db, new Date(Date.now() - AUDIT_RETENTION_DAYS * 86_400_000).toISOString());
    assert.equal((await rows()).length, before - 1);
  });

  securityCases(ctx, { method: 'GET', url: () => '/api/v1/audit-events', crossTenant: false });
});
