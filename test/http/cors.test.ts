// CORS_ORIGINS: browsers on the listed origins may call the API; nothing else gets CORS headers
// (other origins, the console, CORS_ORIGINS unset), and credentials are never allowed.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';

const APP = 'https://app.example.com';
const preflight = (origin: string, method = 'POST') => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': 'content-type,x-api-key,x-business-id,idempotency-key',
});

it('CORS_ORIGINS takes exact origins only, and is off when unset', () => {
  assert.equal(loadConfig({}).corsOrigins, null);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: ' https://app.example.com, http://localhost:5173 ' }).corsOrigins, [
    'https://app.example.com',
    'http://localhost:5173',
  ]);
  for (const bad of [
    '*',
    'null',
    'https://app.example.com/',
    'https://app.example.com/path',
    'app.example.com',
    'ftp://files.example.com',
    'https://*.example.com',
  ]) {
    assert.throws(
      () => loadConfig({ CORS_ORIGINS: bad }),
      (error: unknown) => error instanceof ConfigError && /CORS_ORIGINS/.test(error.message),
      bad,
    );
  }
});

describeEachBackend('CORS when CORS_ORIGINS is unset', (ctx) => {
  it('answers no preflight and sends no CORS headers', async () => {
    const tenant = await ctx().createTenant();
    const options = await ctx().app.inject({ method: 'OPTIONS', url: '/api/v1/items', headers: preflight(APP) });
    assert.notEqual(options.statusCode, 204, 'as any unknown API route: refused without a key');
    assert.equal(options.headers['access-control-allow-origin'], undefined);
    const list = await ctx().request('GET', '/api/v1/items', { as: tenant, headers: { origin: APP } });
    assert.equal(list.status, 200);
    assert.equal(list.headers['access-control-allow-origin'], undefined);
  });
});

describeEachBackend(
  'CORS for CORS_ORIGINS',
  (ctx) => {
    let tenant: Tenant;
    before(async () => {
      tenant = await ctx().createTenant();
    });

    it('answers a preflight from a listed origin, without credentials', async () => {
      const options = await ctx().app.inject({ method: 'OPTIONS', url: '/api/v1/items', headers: preflight(APP) });
      assert.equal(options.statusCode, 204);
      assert.equal(options.headers['access-control-allow-origin'], APP);
      assert.match(String(options.headers['access-control-allow-methods']), /POST/);
      assert.match(String(options.headers['access-control-allow-headers']), /x-api-key/);
      assert.equal(options.headers['access-control-allow-credentials'], undefined);
      assert.equal(options.headers['access-control-max-age'], '600');
      assert.match(String(options.headers.vary), /Origin/);
    });

    it('lets the page read answers, errors and the headers it needs', async () => {
      const list = await ctx().request('GET', '/api/v1/items', { as: tenant, headers: { origin: APP } });
      assert.equal(list.status, 200);
      assert.equal(list.headers['access-control-allow-origin'], APP);
      assert.match(String(list.headers['access-control-expose-headers']), /ETag.*X-Request-Id.*Retry-After/);
      const refused = await ctx().request('GET', '/api/v1/items', { headers: { origin: APP } });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['access-control-allow-origin'], APP, 'a browser can read why it was refused');
      const doc = await ctx().app.inject({ method: 'GET', url: '/openapi.json', headers: { origin: APP } });
      assert.equal(doc.headers['access-control-allow-origin'], APP);
    });

    it('gives other origins, look-alikes included, nothing', async () => {
      for (const origin of [
        'https://evil.example',
        `${APP}.evil.io`,
        'http://app.example.com',
        'null',
        APP.toUpperCase(),
      ]) {
        const options = await ctx().app.inject({ method: 'OPTIONS', url: '/api/v1/items', headers: preflight(origin) });
        assert.equal(options.statusCode, 404, origin);
        assert.equal(options.headers['access-control-allow-origin'], undefined, origin);
        const list = await ctx().request('GET', '/api/v1/items', { as: tenant, headers: { origin } });
        assert.equal(list.headers['access-control-allow-origin'], undefined, origin);
      }
    });

    it('leaves the console and the probes same-origin', async () => {
      for (const url of ['/console/login', '/console', '/healthz', '/api/../console/login']) {
        const options = await ctx().app.inject({ method: 'OPTIONS', url, headers: preflight(APP) });
        assert.equal(options.statusCode, 404, url);
        assert.equal(options.headers['access-control-allow-origin'], undefined, url);
        const page = await ctx().app.inject({ method: 'GET', url, headers: { origin: APP } });
        assert.equal(page.headers['access-control-allow-origin'], undefined, url);
        assert.ok(page.statusCode < 500, url);
      }
    });
  },
  { config: { corsOrigins: [APP] } },
);
