import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describeEachBackend } from '../helpers/context.ts';

const EXTENSIONS = [
  'get /api/v1/items',
  'get /api/v1/buyers',
  'get /api/v1/pricing',
  'get /api/v1/pricing/{id}',
  'post /api/v1/buyers/{id}/orders',
  'post /api/v1/invoices',
  'get /api/v1/events',
  'get /api/v1/orders/{id}/events',
  'get /api/v1/orders/export',
  'get /api/v1/items/export',
  'get /api/v1/buyers/export',
  'get /api/v1/invoices/export',
  'get /api/v1/items/{id}/events',
  'get /api/v1/buyers/{id}/events',
  'get /api/v1/invoices/{id}/events',
  'post /api/v1/webhook-endpoints',
  'get /api/v1/webhook-endpoints',
  'get /api/v1/webhook-endpoints/{id}',
  'patch /api/v1/webhook-endpoints/{id}',
  'delete /api/v1/webhook-endpoints/{id}',
  'post /api/v1/webhook-endpoints/{id}/rotate-secret',
  'post /api/v1/webhook-endpoints/{id}/test',
  'post /api/v1/webhook-endpoints/{id}/replay',
  'get /api/v1/webhook-endpoints/{id}/deliveries',
  'get /api/v1/audit-events',
  'post /api/v1/imports',
  'get /api/v1/imports',
  'get /api/v1/imports/{id}',
  'get /api/v1/imports/{id}/results',
  'post /api/v1/orders/{id}/acknowledgements',
  'get /api/v1/orders/{id}/acknowledgements',
  'post /api/v1/orders/{id}/shipments',
  'get /api/v1/orders/{id}/shipments',
  'get /api/v1/shipments',
  'get /api/v1/shipments/export',
  'get /api/v1/shipments/{id}',
  'patch /api/v1/shipments/{id}',
  'delete /api/v1/shipments/{id}',
  'get /api/v1/shipments/{id}/events',
  'post /api/v1/sandbox/simulations/orders',
];

describeEachBackend('GET /openapi.json', (ctx) => {
  it('is a valid OpenAPI 3.1 document titled Supplyline 1.0.0', async () => {
    const res = await ctx().request('GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    assert.equal(res.body.info.title, 'Supplyline');
    assert.equal(res.body.info.version, '1.0.0');
    const result = await new Validator().validate(res.body);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
  });

  it('documents auth headers and error responses on every operation, and marks extensions', async () => {
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    let operations = 0;
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        operations++;
        const headers = (op.parameters ?? [])
          .filter((p: any) => p.in === 'header')
          .map((p: any) => p.name.toLowerCase());
        // Credentials are security schemes (one Authorize dialog in /docs), not parameters of each operation.
        assert.ok(!headers.includes('x-business-id') && !headers.includes('x-api-key'), `${method} ${path}`);
        // The document's credentials, with the scope of the key the operation needs (test/http/scopes.test.ts).
        assert.deepEqual(Object.keys(op.security?.[0] ?? {}), ['BusinessId', 'ApiKey'], `${method} ${path}`);
        // One scope; writing webhook endpoints, two (they receive the events).
        assert.equal(
          op.security[0].ApiKey.length,
          path.startsWith('/api/v1/webhook-endpoints') && method !== 'get' ? 2 : 1,
          `${method} ${path}`,
        );
        if (method === 'post' || method === 'patch')
          assert.ok(headers.includes('idempotency-key'), `${method} ${path}`);
        assert.ok(op.responses['401'] && op.responses['429'] && op.responses['500'], `${method} ${path}`);
        if (path.includes('{id}')) assert.ok(op.responses['404'], `${method} ${path}`);
        assert.ok(op.operationId && op.summary, `${method} ${path}`);
        assert.equal(
          op['x-supplyline-extension'] === true,
          EXTENSIONS.includes(`${method} ${path}`),
          `${method} ${path}`,
        );
      }
    }
    assert.ok(operations >= 5);
    for (const op of EXTENSIONS) {
      const [method, path] = op.split(' ');
      assert.equal(doc.paths[path][method]['x-supplyline-extension'], true, op);
    }
    assert.equal(doc.paths['/api/v1/items'].post['x-supplyline-extension'], undefined);
    // Sandbox-only operations say so (a live key gets 403).
    const sandboxOnly = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, ops]) =>
      Object.entries<any>(ops)
        .filter(([, op]) => op['x-supplyline-sandbox-only'] === true)
        .map(([method]) => `${method} ${path}`),
    );
    assert.deepEqual(sandboxOnly, ['post /api/v1/sandbox/simulations/orders']);
    assert.ok(doc.components.schemas.ErrorResponse);
    const patchOrder = doc.paths['/api/v1/orders/{id}'].patch;
    assert.ok(
      patchOrder.parameters.some((p: any) => p.in === 'header' && p.name.toLowerCase() === 'if-match'),
      "a route's own headers are kept",
    );
  });

  it("says what the service does: 404 only where something can be missing, the ingestion key's pattern, non-empty updates, history ids of their own resource", async () => {
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    // 404 where a path id, or a resource the body names (an order to announce or invoice), can be missing; nowhere else.
    const namesOther = ['post /api/v1/orders', 'post /api/v1/invoices', 'post /api/v1/sandbox/simulations/orders'];
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const canMiss = path.includes('{') || namesOther.includes(`${method} ${path}`);
        assert.equal(op.responses['404'] !== undefined, canMiss, `${method} ${path}`);
      }
    }
    for (const path of ['/api/v1/items', '/api/v1/buyers', '/api/v1/pricing', '/api/v1/webhook-endpoints'])
      assert.equal(doc.paths[path].post.responses['404'], undefined, path);

    const key = doc.paths['/api/v1/orders'].post.parameters.find(
      (p: any) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
    );
    assert.equal(key.schema.pattern, '^[0-9a-fA-F]{64}$');

    const schemaOf = (op: any) => {
      const schema = op.requestBody.content['application/json'].schema;
      return schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    };
    for (const path of [
      '/api/v1/items/{id}',
      '/api/v1/buyers/{id}',
      '/api/v1/orders/{id}',
      '/api/v1/invoices/{id}',
      '/api/v1/webhook-endpoints/{id}',
    ]) {
      assert.equal(schemaOf(doc.paths[path].patch).minProperties, 1, path);
    }

    for (const [path, prefix] of [
      ['orders', 'ord_'],
      ['items', 'itm_'],
      ['buyers', 'phm_'],
      ['invoices', 'inv_'],
    ]) {
      const id = doc.paths[`/api/v1/${path}/{id}/events`].get.parameters.find((p: any) => p.in === 'path');
      const examples = [id.example, ...(id.examples ?? []), ...(id.schema.examples ?? [])].filter(Boolean);
      assert.ok(
        examples.length > 0 && examples.every((e: string) => e.startsWith(prefix)),
        `${path}: ${JSON.stringify(id)}`,
      );
    }
  });

  it("answers an empty update body, and an ingestion key that is not 64 hex digits, with the contract's 400", async () => {
    const t = await ctx().createTenant();
    for (const path of ['items', 'buyers', 'orders', 'invoices', 'webhook-endpoints']) {
      const res = await ctx().request('PATCH', `/api/v1/${path}/x_1`, { as: t, body: {} });
      assert.equal(res.status, 400, path);
      assert.equal(res.body.message, 'No valid fields provided for update', path);
    }
    const res = await ctx().request('POST', '/api/v1/orders', {
      as: t,
      body: { orderId: 'ord_1', businessId: t.businessId },
      headers: { 'idempotency-key': 'not-hex' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.message, 'Invalid idempotency key format');
  });

  it('serves the docs UI from the package, without a CDN', async () => {
    const res = await ctx().request('GET', '/docs/');
    assert.equal(res.status, 200);
    assert.match(String(res.body), /swagger/i);
    assert.ok(!/https?:\/\/(cdn|unpkg)/.test(String(res.body)));
  });
});
