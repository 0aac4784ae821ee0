import { sql } from 'kysely';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { CONTENT_ENCODING_MESSAGE } from '../../src/http/json-body.ts';
import { after, before, describe, it } from 'node:test';
import { createApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { backends, createTestDatabase, describeEachBackend, type TestDatabase } from '../helpers/context.ts';

const item = { item: { name: 'X' }, variants: [{ currency: 'AUD', price: 1 }] };

function assertErrorBody(body: any, code: string, requestId: unknown) {
  assert.equal(body.errorCode, code);
  assert.equal(typeof body.message, 'string');
  assert.equal(body.error, body.message);
  assert.equal(body.requestId, requestId);
}

describeEachBackend('HTTP error model', (ctx) => {
  it('puts X-Request-Id on every response, and honours a sane incoming one', async () => {
    const t = await ctx().createTenant();
    const ok = await ctx().request('GET', '/api/v1/items', { as: t });
    assert.match(String(ok.headers['x-request-id']), /^req_/);
    const health = await ctx().request('GET', '/healthz');
    assert.match(String(health.headers['x-request-id']), /^req_/);
    const mine = await ctx().request('GET', '/api/v1/items', { as: t, headers: { 'x-request-id': 'trace-123' } });
    assert.equal(mine.headers['x-request-id'], 'trace-123');
    const hostile = await ctx().request('GET', '/api/v1/items', { as: t, headers: { 'x-request-id': 'a b\u0001' } });
    assert.match(String(hostile.headers['x-request-id']), /^req_/);
  });

  it('answers unknown routes with the standard 404 body', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().request('GET', '/api/v1/nothing-here', { as: t });
    assert.equal(res.status, 404);
    assertErrorBody(res.body, 'NOT_FOUND', res.headers['x-request-id']);
    const outside = await ctx().request('GET', '/nothing');
    assert.equal(outside.status, 404);
    assertErrorBody(outside.body, 'NOT_FOUND', outside.headers['x-request-id']);
  });

  it('gives 415 for a body that is not JSON, and 400 for broken or empty JSON', async () => {
    const t = await ctx().createTenant();
    const text = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(text.status, 415);
    assertErrorBody(text.body, 'UNSUPPORTED_MEDIA_TYPE', text.headers['x-request-id']);
    const form = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: 'a=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.status, 415);
    const broken = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: '{"item":',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(broken.status, 400);
    assertErrorBody(broken.body, 'VALIDATION_ERROR', broken.headers['x-request-id']);
    const empty = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: '',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(empty.status, 400);
    for (const body of ['{"__proto__":{"x":1}}', '{"item":{"constructor":{"prototype":{"x":1}}}}']) {
      const proto = await ctx().request('POST', '/api/v1/items', { as: t, body });
      assert.equal(proto.status, 400);
      assert.equal(proto.body.message, 'Request body must not contain the keys __proto__ or constructor.prototype');
    }
    const noBody = await ctx().request('POST', '/api/v1/items', { as: t });
    assert.equal(noBody.status, 400);
  });

  it('gives 415 for a compressed body, which it would otherwise read as broken JSON or take as plain', async () => {
    const t = await ctx().createTenant();
    const body = JSON.stringify({ item: { name: 'Packed' }, variants: [{ currency: 'AUD', price: 1 }] });
    for (const [coding, payload] of [
      ['gzip', gzipSync(body)],
      ['gzip', body],
      ['br, gzip', body],
    ] as const) {
      const res = await ctx().request('POST', '/api/v1/items', {
        as: t,
        body: payload,
        headers: { 'content-type': 'application/json', 'content-encoding': coding },
      });
      assert.equal(res.status, 415, coding);
      assertErrorBody(res.body, 'UNSUPPORTED_MEDIA_TYPE', res.headers['x-request-id']);
      assert.equal(res.body.message, CONTENT_ENCODING_MESSAGE);
      assert.equal(res.headers['accept-encoding'], 'identity');
    }
    const imported = await ctx().request('POST', '/api/v1/imports', {
      as: t,
      body: `{"op":"create","resource":"buyer","data":{"buyer":{"name":"x"}}}\n`,
      headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
    });
    assert.equal(imported.status, 415);
    assert.equal(imported.body.message, CONTENT_ENCODING_MESSAGE);
    const identity = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body,
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    });
    assert.equal(identity.status, 201, 'identity is no coding');
    assert.equal(
      (await ctx().request('GET', '/api/v1/items', { as: t, headers: { 'content-encoding': 'gzip' } })).status,
      200,
    );
  });

  it('gives 413 above the body limit', async () => {
    const t = await ctx().createTenant();
    const big = { ...item, item: { name: 'X', description: 'x'.repeat(ctx().config.bodyLimitBytes) } };
    const res = await ctx().request('POST', '/api/v1/items', { as: t, body: big });
    assert.equal(res.status, 413);
    assertErrorBody(res.body, 'PAYLOAD_TOO_LARGE', res.headers['x-request-id']);
  });

  it('leaves no timer behind an injected 413, whose socket cannot be closed', async (t) => {
    const tenant = await ctx().createTenant();
    const big = { ...item, item: { name: 'X', description: 'x'.repeat(ctx().config.bodyLimitBytes) } };
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const res = await ctx().request('POST', '/api/v1/items', { as: tenant, body: big });
    assert.equal(res.status, 413);
    // Past the discard time of a real connection: a timer left behind would fire here.
    t.mock.timers.tick(60_000);
  });

  it('serves health and readiness without credentials', async () => {
    assert.equal((await ctx().request('GET', '/healthz')).status, 200);
    const ready = await ctx().request('GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ok');
  });
});

for (const backend of backends) {
  describe(`[${backend}] unexpected errors`, () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase(backend);
    });
    after(async () => {
      await database.handle.close();
      await database.drop();
    });

    it('answers 500 with a generic body that reveals nothing internal', async () => {
      const app = await createApp({
        db: database.handle.db,
        config: loadConfig({ RATE_LIMIT_RPS: '0' }),
        rateLimiter: null,
      });
      app.get('/boom', async () => {
        throw new Error('secret table users_private exploded at /srv/app.ts:12');
      });
      const res = await app.inject({ method: 'GET', url: '/boom' });
      await app.close();
      assert.equal(res.statusCode, 500);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['error', 'errorCode', 'message', 'requestId']);
      assert.equal(body.errorCode, 'INTERNAL_ERROR');
      assert.equal(body.message, 'Internal server error');
      assert.ok(!res.body.includes('secret') && !res.body.includes('.ts'));
    });

    it('probes: /livez and /healthz while the process answers; /readyz only with every migration applied and not shutting down', async () => {
      const other = await createTestDatabase(backend);
      let draining = false;
      const app = await createApp({
        db: other.handle.db,
        config: loadConfig({ RATE_LIMIT_RPS: '0' }),
        rateLimiter: null,
        lifecycle: { draining: () => draining },
      });
      try {
        const probe = async (url: string) => {
          const r = await app.inject({ method: 'GET', url });
          return [r.statusCode, r.json()];
        };
        assert.deepEqual(await probe('/livez'), [200, { status: 'ok' }]);
        assert.deepEqual(await probe('/healthz'), [200, { status: 'ok' }]);
        // A migration this release knows is missing (another release rolled it back, or it never ran).
        const { rows } = await sql<{
          name: string;
        }>`select name from kysely_migration order by name desc limit 1`.execute(other.handle.db);
        await sql`delete from kysely_migration where name = ${rows[0].name}`.execute(other.handle.db);
        assert.deepEqual(await probe('/readyz'), [503, { status: 'unavailable', reason: 'migrations pending' }]);
        await sql`insert into kysely_migration (name, timestamp) values (${rows[0].name}, ${new Date(0).toISOString()})`.execute(
          other.handle.db,
        );
        assert.deepEqual(await probe('/readyz'), [200, { status: 'ok' }]);
        draining = true;
        assert.deepEqual(
          await probe('/readyz'),
          [503, { status: 'unavailable', reason: 'shutting down' }],
          'readiness fails first on SIGTERM',
        );
        assert.deepEqual(await probe('/livez'), [200, { status: 'ok' }], 'while the process still answers');
      } finally {
        await app.close();
        await other.handle.close();
        await other.drop();
      }
    });

    it('protects /metrics with METRICS_TOKEN when it is set', async () => {
      const token = 'scrape-token-0123456789';
      const app = await createApp({
        db: database.handle.db,
        config: loadConfig({ RATE_LIMIT_RPS: '0', METRICS_TOKEN: token }),
        rateLimiter: null,
      });
      try {
        const scrape = (authorization?: string) =>
          app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
        for (const wrong of [undefined, 'Bearer nope', `Basic ${token}`, `Bearer ${token}x`]) {
          const refused = await scrape(wrong);
          assert.equal(refused.statusCode, 401, String(wrong));
          assert.equal(refused.headers['www-authenticate'], 'Bearer realm="metrics"');
          assert.equal(refused.json().errorCode, 'UNAUTHORIZED');
        }
        const ok = await scrape(`Bearer ${token}`);
        assert.equal(ok.statusCode, 200);
        assert.match(ok.body, /supplyline_http_requests_total/);
      } finally {
        await app.close();
      }
      const open = await createApp({
        db: database.handle.db,
        config: loadConfig({ RATE_LIMIT_RPS: '0' }),
        rateLimiter: null,
      });
      assert.equal(
        (await open.inject({ method: 'GET', url: '/metrics' })).statusCode,
        200,
        'open without a token, as before',
      );
      await open.close();
      assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), /METRICS_TOKEN must be at least 16/);
    });

    it('answers /readyz 503 when the database is gone', async () => {
      const other = await createTestDatabase(backend);
      const app = await createApp({
        db: other.handle.db,
        config: loadConfig({ RATE_LIMIT_RPS: '0' }),
        rateLimiter: null,
      });
      await other.handle.close();
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      await app.close();
      await other.drop();
      assert.equal(res.statusCode, 503);
    });
  });
}

describeEachBackend('NUL characters', (ctx) => {
  it('are refused with 400 in bodies and query strings, on both backends', async () => {
    const t = await ctx().createTenant();
    const body = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'a\u0000b' }, variants: [{ currency: 'AUD', price: 1 }] },
    });
    assert.equal(body.status, 400);
    assert.match(body.body.message, /NUL/);
    const query = await ctx().request('GET', '/api/v1/items?propertyPath=a&propertyValue=%00', { as: t });
    assert.equal(query.status, 400);
  });
});

describeEachBackend('integer query parameters', (ctx) => {
  it('take plain decimal digits only: hex, binary, exponents and a plus sign are 400, not read as numbers', async () => {
    const t = await ctx().createTenant();
    for (const [path, field] of [
      ['/api/v1/orders?limit=0x14', 'limit'],
      ['/api/v1/orders?limit=0b11', 'limit'],
      ['/api/v1/orders?limit=1e1', 'limit'],
      ['/api/v1/orders?page=%2B1', 'page'],
      ['/api/v1/orders?limit=1.0', 'limit'],
      ['/api/v1/orders?limit=%201', 'limit'],
      ['/api/v1/items?limit=0x14', 'limit'],
      ['/api/v1/events?after=0x1', 'after'],
      ['/api/v1/events?limit=1e2', 'limit'],
    ] as const) {
      const res = await ctx().request('GET', path, { as: t });
      assert.equal(res.status, 400, path);
      assert.equal(res.body.errorCode, 'VALIDATION_ERROR', path);
      assert.match(res.body.fieldErrors[field], /Expected integer/, path);
    }
    const plain = await ctx().request('GET', '/api/v1/orders?limit=007&page=1', { as: t });
    assert.equal(plain.status, 200);
    assert.equal(plain.body.pageSize, 7);
    const feed = await ctx().request('GET', '/api/v1/events?after=1&limit=10', { as: t });
    assert.equal(feed.status, 200);
    assert.ok(
      feed.body.items.every((e: { sequence: number }) => e.sequence > 1),
      'after=1 starts after sequence 1',
    );
    // Bounds are still the schema's: a negative number is an integer, and out of range.
    assert.equal((await ctx().request('GET', '/api/v1/orders?limit=-1', { as: t })).status, 400);
  });
});

describeEachBackend('If-Match on a resource without an ETag', (ctx) => {
  it('is a 412 on items, buyers and webhook endpoints, which have no versions, unless it is *', async () => {
    const t = await ctx().createTenant();
    const item = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Tea' }, variants: [{ currency: 'AUD', price: 1 }] },
    });
    const buyer = await ctx().request('POST', '/api/v1/buyers', { as: t, body: { buyer: { name: 'Cafe' } } });
    const endpoint = await ctx().request('POST', '/api/v1/webhook-endpoints', {
      as: t,
      body: { url: 'https://erp.example.com/hooks', eventTypes: ['order.*'] },
    });
    for (const [plural, path, body, field, value] of [
      ['Items', `/api/v1/items/${item.body.id}`, { name: 'Green tea' }, 'name', 'Green tea'],
      ['Buyers', `/api/v1/buyers/${buyer.body.id}`, { buyer: { name: 'Corner cafe' } }, 'name', 'Corner cafe'],
      [
        'Webhook endpoints',
        `/api/v1/webhook-endpoints/${endpoint.body.id}`,
        { description: 'ERP' },
        'description',
        'ERP',
      ],
    ] as const) {
      const guarded = await ctx().request('PATCH', path, { as: t, body, headers: { 'if-match': '"1"' } });
      assert.equal(guarded.status, 412, plural);
      assert.equal(
        guarded.body.message,
        `${plural} have no ETag, so If-Match cannot match: send the PATCH without it (it is not guarded)`,
      );
      assert.notEqual((await ctx().request('GET', path, { as: t })).body[field], value, `${plural}: nothing changed`);
      const any = await ctx().request('PATCH', path, { as: t, body, headers: { 'if-match': '*' } });
      assert.equal(any.status, 200, `${plural}: * matches any current record`);
      assert.equal(any.body[field], value);
    }
  });
});
