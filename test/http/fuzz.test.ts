import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describeEachBackend } from '../helpers/context.ts';
import { createFixture } from '../helpers/orders.ts';

const RUNS = 40;

describeEachBackend('Arbitrary input never causes a 5xx', (ctx) => {
  it('holds for arbitrary JSON bodies, query strings and ids on every operation', async () => {
    const t = await ctx().createTenant();
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    const operations = Object.entries<Record<string, unknown>>(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })),
    );
    assert.ok(operations.length >= 5);

    const idArb = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom('itm_x', '0', '%00', '..', '.', 'a'.repeat(300)),
    );
    const queryArb = fc.dictionary(
      fc.constantFrom(
        'page',
        'limit',
        'propertyPath',
        'propertyValue',
        'propertyExists',
        'updatedSince',
        'status',
        'includeDeleted',
        'keyId',
        'kind',
        'since',
        'until',
        'cursor',
        'x',
      ),
      fc.string({ maxLength: 30 }),
    );
    for (const { method, path } of operations) {
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), idArb, queryArb, async (body, id, query) => {
          const url = `${path.replace(/\{[^}]+\}/g, encodeURIComponent(id))}?${new URLSearchParams(query).toString()}`;
          const hasBody = method === 'POST' || method === 'PATCH';
          const res = await ctx().request(method, url, { as: t, body: hasBody ? body : undefined });
          assert.ok(
            res.status < 500,
            `${method} ${url} ${JSON.stringify(body)?.slice(0, 200)} -> ${res.status} ${JSON.stringify(res.body)}`,
          );
          if (res.status >= 400) {
            assert.equal(typeof res.body.errorCode, 'string');
            assert.equal(res.body.error, res.body.message);
          }
        }),
        { numRuns: RUNS },
      );
    }
  });

  it('holds for the sandbox-only operations with a test key, for arbitrary bodies and ones close to valid', async () => {
    const live = await ctx().createTenant();
    await createFixture(ctx(), live);
    const sandbox = await ctx().createSandbox(live);
    const buyerId = (await ctx().request('GET', '/api/v1/buyers', { as: sandbox })).body.items[0].id;
    const doc = (await ctx().request('GET', '/openapi.json')).body;
    const operations = Object.entries<Record<string, Record<string, unknown>>>(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op['x-supplyline-sandbox-only'] === true)
        .map(([method]) => ({ method: method.toUpperCase(), path })),
    );
    assert.deepEqual(operations, [{ method: 'POST', path: '/api/v1/sandbox/simulations/orders' }]);
    const near = fc.record(
      {
        buyerId: fc.oneof(fc.string({ maxLength: 80 }), fc.constant(buyerId)),
        lines: fc.oneof(fc.integer({ min: -2, max: 25 }), fc.double(), fc.string()),
        count: fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constant(101), fc.double(), fc.string()),
      },
      { requiredKeys: [] },
    );
    for (const { method, path } of operations) {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue({ maxDepth: 4 }), near), async (body) => {
          const res = await ctx().request(method, path, { as: sandbox, body });
          assert.ok(
            res.status < 500,
            `${method} ${path} ${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.body)}`,
          );
          if (res.status >= 400) assert.equal(typeof res.body.errorCode, 'string');
        }),
        { numRuns: RUNS * 2 },
      );
    }
  });

  it('holds for structured bodies close to valid ones', async () => {
    const t = await ctx().createTenant();
    const variant = fc.record(
      {
        currency: fc.oneof(fc.constantFrom('AUD', 'USD'), fc.string()),
        price: fc.oneof(fc.double(), fc.integer(), fc.string()),
        cost: fc.option(fc.oneof(fc.double(), fc.string())),
        sequence: fc.option(fc.oneof(fc.integer(), fc.double())),
        properties: fc.option(fc.object()),
      },
      { requiredKeys: ['currency', 'price'] },
    );
    const body = fc.record({
      item: fc.record(
        { name: fc.string({ maxLength: 300 }), handle: fc.option(fc.string()), properties: fc.option(fc.object()) },
        { requiredKeys: ['name'] },
      ),
      variants: fc.array(variant, { maxLength: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await ctx().request('POST', '/api/v1/items', { as: t, body: b });
        assert.ok(res.status < 500, `${JSON.stringify(b).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body)}`);
      }),
      { numRuns: 150 },
    );
  });
});
