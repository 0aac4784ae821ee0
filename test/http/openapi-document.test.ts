import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { GUIDE_STATUSES, ORDER_STATUSES } from '../../src/orders/schema.ts';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createResponseChecker } from '../helpers/openapi-check.ts';
import { createFixture, DELIVERY } from '../helpers/orders.ts';
import { importNow } from '../helpers/imports.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const document = async (ctx: TestContext) => (await ctx.request('GET', '/openapi.json')).body;
const operations = (doc: any) =>
  Object.entries<Record<string, any>>(doc.paths).flatMap(([path, ops]) =>
    Object.entries<any>(ops).map(([method, op]) => ({ path, method, op })),
  );

/** The query "Try it out" sends without edits: each parameter's default, and any example it shows. */
function tryItOutQuery(op: any): string {
  const query = new URLSearchParams();
  for (const p of op.parameters ?? []) {
    if (p.in !== 'query') continue;
    const value = p.example ?? p.schema?.examples?.[0] ?? p.schema?.default;
    if (value !== undefined) query.set(p.name, String(value));
  }
  return query.toString();
}

async function createOneOfEach(ctx: TestContext, as: Tenant) {
  const f = await createFixture(ctx, as);
  const list = await ctx.request('POST', '/api/v1/pricing', {
    as,
    body: {
      itemListData: { label: 'Wholesale' },
      entries: [{ itemVariantId: f.variantIds[0] }],
      partnerships: [f.partnershipId],
    },
  });
  assert.equal(list.status, 201);
  const order = await ctx.request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
    as,
    body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1 }] },
  });
  assert.equal(order.status, 201);
  assert.equal((await ctx.request('POST', '/api/v1/invoices', { as, body: { orderId: order.body.id } })).status, 201);
  const shipment = await ctx.request('POST', `/api/v1/orders/${order.body.id}/shipments`, {
    as,
    body: { lines: [{ orderItemId: order.body.orderItems[0].id, quantity: 1 }] },
  });
  assert.equal(shipment.status, 201);
  const hook = await ctx.request('POST', '/api/v1/webhook-endpoints', {
    as,
    body: { url: 'https://hooks.example.com/in', status: 'paused' },
  });
  assert.equal(hook.status, 201);
  // Its results are listed once the import has run.
  await importNow(ctx, as, [{ op: 'create', resource: 'buyer', data: { buyer: { name: 'Imported' } } }]);
}

describeEachBackend('The OpenAPI document (issue 16)', (ctx) => {
  it('declares the credentials as security schemes for every operation, and a server', async () => {
    const doc = await document(ctx());
    assert.deepEqual(doc.security, [{ BusinessId: [], ApiKey: [] }]);
    assert.deepEqual(
      [doc.components.securitySchemes.BusinessId, doc.components.securitySchemes.ApiKey].map((s: any) => [
        s.type,
        s.in,
        s.name,
      ]),
      [
        ['apiKey', 'header', 'X-Business-Id'],
        ['apiKey', 'header', 'X-API-Key'],
      ],
    );
    assert.ok(doc.servers.length > 0 && doc.servers.every((s: any) => s.url));
  });

  it('makes every list parameter optional, with no example values that "Try it out" would send as filters', async () => {
    const doc = await document(ctx());
    for (const { path, method, op } of operations(doc)) {
      for (const p of (op.parameters ?? []).filter((x: any) => x.in === 'query')) {
        assert.equal(p.required, false, `${method} ${path} ${p.name}`);
        assert.equal(p.example ?? p.examples ?? p.schema?.examples, undefined, `${method} ${path} ${p.name}`);
      }
    }
    const status = doc.paths['/api/v1/orders'].get.parameters.find((p: any) => p.name === 'status').schema;
    // The contract's statuses, and the order guide's, which a list takes as filters.
    assert.deepEqual(doc.components.schemas[status.$ref.split('/').pop()].enum, [
      ...ORDER_STATUSES,
      ...Object.keys(GUIDE_STATUSES),
    ]);
  });

  it('"Try it out" answers every list with its records, with no edits', async () => {
    const t = await ctx().createTenant();
    await createOneOfEach(ctx(), t);
    const doc = await document(ctx());
    const lists = operations(doc).filter(({ method, path }) => method === 'get' && !path.includes('{'));
    assert.ok(lists.length >= 5);
    for (const { path, op } of lists) {
      const query = tryItOutQuery(op);
      const res = await ctx().request('GET', `${path}${query ? `?${query}` : ''}`, { as: t });
      assert.equal(res.status, 200, `${path}?${query}: ${JSON.stringify(res.body)}`);
      // A page or the feed has items; an export (NDJSON) has lines.
      const ndjson = /x-ndjson/.test(String(res.headers['content-type']));
      const records = ndjson
        ? typeof res.body === 'string'
          ? res.body.split('\n').filter(Boolean)
          : [res.body]
        : res.body.items;
      assert.ok(records.length > 0, `${path}?${query} is empty`);
    }
  });

  it('names the shapes as components, and refers to them', async () => {
    const doc = await document(ctx());
    for (const name of [
      'Order',
      'OrderItem',
      'Item',
      'Variant',
      'Buyer',
      'PriceList',
      'PriceListEntry',
      'Invoice',
      'InvoiceLineItem',
      'ErrorResponse',
      'CreateOrderBody',
      'UpdateOrderBody',
    ]) {
      assert.ok(doc.components.schemas[name], name);
    }
    const ok = (path: string, method: string, status: string) =>
      doc.paths[path][method].responses[status].content['application/json'].schema.$ref;
    assert.equal(ok('/api/v1/orders/{id}', 'get', '200'), '#/components/schemas/Order');
    assert.equal(ok('/api/v1/orders', 'get', '200'), '#/components/schemas/OrderPage');
    assert.equal(ok('/api/v1/items/{id}', 'patch', '200'), '#/components/schemas/Item');
    assert.equal(doc.components.schemas.Order.properties.phase.$ref, '#/components/schemas/OrderPhase');
  });

  it('says what JSON Schema can say about an order item: exactly one of its two ids', async () => {
    const doc = await document(ctx());
    assert.deepEqual(doc.components.schemas.CreateOrderItem.oneOf, [
      { required: ['itemListEntryId'] },
      { required: ['itemVariantId'] },
    ]);
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const both = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: f.variantIds[0], itemListEntryId: f.entryIds[0], quantity: 1 }],
      },
    });
    assert.equal(both.status, 400);
    assert.deepEqual(both.body.fieldErrors, {
      'orderItems.0': 'Give exactly one of itemListEntryId and itemVariantId',
    });
    const neither = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: { expectedDeliveryAt: DELIVERY, orderItems: [{ quantity: 1 }] },
    });
    assert.deepEqual(neither.body.fieldErrors, {
      'orderItems.0': 'Give exactly one of itemListEntryId and itemVariantId',
    });
    const list = doc.paths['/api/v1/orders'].get.description;
    assert.match(list, /modifiedSince cannot be combined with createdSince or updatedSince/);
    assert.match(list, /each requires propertyPath/);
  });

  it('describes every answer, with error examples of their own status, and declares the response headers', async () => {
    const doc = await document(ctx());
    const codes: Record<string, string> = {
      401: 'UNAUTHORIZED',
      404: 'NOT_FOUND',
      410: 'GONE',
      412: 'PRECONDITION_FAILED',
      422: 'IDEMPOTENCY_KEY_REUSED',
      429: 'RATE_LIMITED',
      500: 'INTERNAL_ERROR',
    };
    for (const { path, method, op } of operations(doc)) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        assert.notEqual(response.description, 'Default Response', `${method} ${path} ${status}`);
        assert.ok(response.headers['X-Request-Id'], `${method} ${path} ${status}`);
        const example = response.content?.['application/json']?.example;
        if (Number(status) >= 400) {
          assert.ok(example, `${method} ${path} ${status}`);
          if (codes[status]) assert.equal(example.errorCode, codes[status], `${method} ${path} ${status}`);
          if (status !== '400') assert.equal(example.fieldErrors, undefined, `${method} ${path} ${status}`);
        }
        if (status === '429') assert.ok(response.headers['Retry-After']);
      }
    }
    assert.equal(doc.components.headers['X-Request-Id'].required, true);
    for (const [path, method, status] of [
      ['/api/v1/orders/{id}', 'get', '200'],
      ['/api/v1/orders/{id}', 'patch', '200'],
      ['/api/v1/invoices/{id}', 'get', '200'],
      ['/api/v1/buyers/{id}/orders', 'post', '201'],
    ]) {
      assert.ok(doc.paths[path][method].responses[status].headers.ETag, `${method} ${path}`);
    }
    assert.ok(
      doc.paths['/api/v1/orders/{id}'].patch.parameters.some((p: any) => p.in === 'header' && p.name === 'if-match'),
    );
    assert.equal(doc.paths['/api/v1/orders'].get.responses['200'].headers.ETag, undefined);
  });

  it('gives request examples that the document accepts, and that the server takes', async () => {
    const doc = await document(ctx());
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const examples: Record<string, any> = {};
    for (const { path, method, op } of operations(doc)) {
      const media = op.requestBody?.content?.['application/json'];
      if (!media) continue;
      assert.ok(media.example, `${method} ${path} has an example body`);
      const validate = ajv.compile({ $ref: `doc${media.schema.$ref}` });
      assert.ok(validate(media.example), `${method} ${path}: ${JSON.stringify(validate.errors)}`);
      examples[`${method} ${path}`] = media.example;
    }
    const t = await ctx().createTenant();
    const item = await ctx().request('POST', '/api/v1/items', { as: t, body: examples['post /api/v1/items'] });
    assert.equal(item.status, 201, JSON.stringify(item.body));
    const buyer = await ctx().request('POST', '/api/v1/buyers', { as: t, body: examples['post /api/v1/buyers'] });
    assert.equal(buyer.status, 201, JSON.stringify(buyer.body));
    const example = examples['post /api/v1/buyers/{id}/orders'];
    const order = await ctx().request('POST', `/api/v1/buyers/${buyer.body.id}/orders`, {
      as: t,
      body: { ...example, orderItems: [{ ...example.orderItems[0], itemVariantId: item.body.variantIds[0] }] },
    });
    assert.equal(order.status, 201, JSON.stringify(order.body));
  });

  it("serves /docs under the product's name and logo, and GET / points there", async () => {
    const page = await ctx().request('GET', '/docs/');
    assert.match(String(page.body), /<title>Supplyline API<\/title>/);
    const init = await ctx().request('GET', '/docs/static/swagger-initializer.js');
    assert.match(String(init.body), /data:image\/svg\+xml;base64,/);
    assert.match(String(init.body), /persistAuthorization/);
    const root = await ctx().request('GET', '/');
    assert.equal(root.status, 302);
    assert.equal(root.headers.location, '/docs');
    assert.equal(root.body.docs, '/docs');
  });
});

describe('The response check of the test helpers', () => {
  const doc = {
    openapi: '3.1.0',
    paths: {
      '/api/v1/things': {
        get: {
          parameters: [{ in: 'query', name: 'page', required: true, schema: { type: 'integer' } }],
          responses: {
            200: {
              description: 'A page',
              headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Page' } } },
            },
          },
        },
      },
    },
    components: {
      headers: { 'X-Request-Id': { required: true, schema: { type: 'string' } } },
      schemas: { Page: { type: 'object', required: ['total'], properties: { total: { type: 'integer' } } } },
    },
  };
  const check = createResponseChecker(doc);
  const answer = {
    method: 'GET',
    url: '/api/v1/things?page=1',
    status: 200,
    headers: { 'x-request-id': 'r' },
    body: '{"total":1}',
  };

  it('passes a response that matches', () => assert.deepEqual(check(answer), []));
  it('fails an undeclared status', () => assert.match(check({ ...answer, status: 404 }).join(), /status not declared/));
  it('fails a body that does not match', () =>
    assert.match(check({ ...answer, body: '{"total":"1"}' }).join(), /does not match/));
  it('fails a missing required header', () =>
    assert.match(check({ ...answer, headers: {} }).join(), /required header X-Request-Id missing/));
  it('fails a request the server took but the document refuses', () => {
    assert.match(check({ ...answer, url: '/api/v1/things' }).join(), /without the required query parameter page/);
    assert.match(check({ ...answer, url: '/api/v1/things?page=1&x=2' }).join(), /undeclared query parameter x/);
  });
  it('leaves alone what the document does not describe', () =>
    assert.deepEqual(check({ ...answer, url: '/healthz' }), []));
});
