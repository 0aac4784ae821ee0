import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder, type OrderFixture } from '../helpers/orders.ts';

// The defects found by black-box probing (issue 13), one test each, on both backends.

function assertRefused(
  res: { status: number; body: any; headers: Record<string, unknown> },
  status: number,
  field?: string,
) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(typeof res.body.errorCode, 'string');
  assert.equal(res.body.error, res.body.message);
  assert.equal(res.body.requestId, res.headers['x-request-id']);
  if (field) assert.ok(res.body.fieldErrors?.[field], `fieldErrors.${field} in ${JSON.stringify(res.body)}`);
}

async function setup(ctx: TestContext): Promise<{ t: Tenant; f: OrderFixture; orderId: string }> {
  const t = await ctx.createTenant();
  const f = await createFixture(ctx, t);
  const order = await createOrder(ctx, t, f);
  return { t, f, orderId: order.id };
}

describeEachBackend('Hostile input: dates', (ctx) => {
  for (const value of [
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999-14:00',
    '+010000-01-01T00:00:00Z',
    '-000001-01-01T00:00:00Z',
  ]) {
    it(`refuses shippedAt ${value} with a field error, and the lists stay readable`, async () => {
      const { t, orderId } = await setup(ctx());
      const res = await patchOrder(ctx(), t, orderId, { order: { shippedAt: value } });
      assertRefused(res, 400, 'order.shippedAt');
      assert.equal((await ctx().request('GET', '/api/v1/orders', { as: t })).status, 200);
      assert.equal((await ctx().request('GET', `/api/v1/orders/${orderId}`, { as: t })).status, 200);
    });
  }

  it('accepts the first and last representable instants, and reads them back', async () => {
    const { t, orderId } = await setup(ctx());
    for (const [value, stored] of [
      ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ['0001-01-01T10:00:00+10:00', '0001-01-01T00:00:00.000Z'],
    ]) {
      const res = await patchOrder(ctx(), t, orderId, { order: { shippedAt: value } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.shippedAt, stored);
      const list = await ctx().request('GET', '/api/v1/orders', { as: t });
      assert.equal(list.status, 200);
      assert.equal(list.body.items[0].shippedAt, stored);
    }
  });

  for (const name of ['createdSince', 'updatedSince', 'modifiedSince']) {
    it(`refuses ${name}=0000-01-01T00:00:00Z with a field error`, async () => {
      const t = await ctx().createTenant();
      assertRefused(await ctx().request('GET', `/api/v1/orders?${name}=0000-01-01T00:00:00Z`, { as: t }), 400, name);
      assertRefused(
        await ctx().request('GET', `/api/v1/orders?${name}=${encodeURIComponent('9999-12-31T23:59:59-01:00')}`, {
          as: t,
        }),
        400,
        name,
      );
    });
  }
});

describeEachBackend('Hostile input: numbers', (ctx) => {
  it('refuses an order item beyond the documented bounds with 400, never 500', async () => {
    const { t, f, orderId } = await setup(ctx());
    const res = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: {
        expectedDeliveryAt: '2030-01-01T00:00:00Z',
        orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1e9, price: 1e12 }],
      },
    });
    assertRefused(res, 400);
    const patch = await patchOrder(ctx(), t, orderId, {
      orderItems: { create: [{ itemListEntryId: f.entryIds[1], quantity: 1e9, price: 1e12 }] },
    });
    assertRefused(patch, 400);
    const precise = await patchOrder(ctx(), t, orderId, { order: { totalAmount: 0.1234567 } });
    assertRefused(precise, 400, 'order.totalAmount');
  });

  it('keeps arithmetic exact at the bounds', async () => {
    const { t, f } = await setup(ctx());
    const order = await createOrder(ctx(), t, f, {
      orderItems: [{ itemVariantId: f.variantIds[0], quantity: 999999.999999, price: 999999999.9999 }],
    });
    // 999999.999999 × 999999999.9999 = (1e6 - 1e-6)(1e9 - 1e-4) = 1e15 - 1100 + 1e-10, exactly.
    assert.equal(order.totalAmount, '999999999998900.0000000001');
    const read = await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t });
    assert.equal(read.body.orderItems[0].quantity, 999999.999999);
    assert.equal(read.body.orderItems[0].price, '999999999.9999');
    assert.equal((await ctx().request('GET', '/api/v1/orders', { as: t })).status, 200);
  });

  for (const resource of ['items', 'buyers', 'invoices', 'orders', 'pricing']) {
    it(`compares extreme numeric texts in propertyValue safely on /${resource}`, async () => {
      const t = await ctx().createTenant();
      for (const value of ['1e-20000', '-1e-1000000', '1e400', '-1e999999', 'Infinity', 'NaN', '1e+308', '0e0', '-0']) {
        const url = `/api/v1/${resource}?propertyPath=a&propertyValue=${encodeURIComponent(value)}`;
        const res = await ctx().request('GET', url, { as: t });
        assert.ok(res.status === 200 || res.status === 400, `${url}: ${res.status} ${JSON.stringify(res.body)}`);
        if (res.status === 200) assert.equal(res.body.total, 0);
      }
    });
  }
});

describeEachBackend('Hostile input: text', (ctx) => {
  it('refuses lone surrogates in any string field with a field error, and stores nothing', async () => {
    const t = await ctx().createTenant();
    const body = '{"item":{"name":"a\\ud800b"},"variants":[{"currency":"AUD","price":1}]}';
    assertRefused(await ctx().request('POST', '/api/v1/items', { as: t, body }), 400, 'item.name');
    const nested = '{"item":{"name":"ok","properties":{"x":["\\udc00"]}},"variants":[{"currency":"AUD","price":1}]}';
    assertRefused(await ctx().request('POST', '/api/v1/items', { as: t, body: nested }), 400, 'item.properties.x.0');
    const key = '{"item":{"name":"ok","properties":{"\\ud800":1}},"variants":[{"currency":"AUD","price":1}]}';
    assertRefused(await ctx().request('POST', '/api/v1/items', { as: t, body: key }), 400);
    assert.equal((await ctx().request('GET', '/api/v1/items', { as: t })).body.total, 0);
    // A well-formed pair is fine.
    const pair = '{"item":{"name":"a\\ud83d\\udca5b"},"variants":[{"currency":"AUD","price":1}]}';
    const ok = await ctx().request('POST', '/api/v1/items', { as: t, body: pair });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal((await ctx().request('GET', `/api/v1/items/${ok.body.id}`, { as: t })).body.name, 'a💥b');
  });

  it('refuses bytes that are not UTF-8 rather than storing U+FFFD', async () => {
    const t = await ctx().createTenant();
    const res = await ctx().app.inject({
      method: 'POST',
      url: '/api/v1/items',
      headers: { ...t.headers, 'content-type': 'application/json' },
      payload: Buffer.concat([
        Buffer.from('{"item":{"name":"a'),
        Buffer.from([0xed, 0xa0, 0x80, 0xff]),
        Buffer.from('"},"variants":[{"currency":"AUD","price":1}]}'),
      ]),
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(JSON.parse(res.body).errorCode, 'VALIDATION_ERROR');
  });

  it('refuses lone surrogates in query strings', async () => {
    const t = await ctx().createTenant();
    assertRefused(await ctx().request('GET', '/api/v1/orders?propertyPath=a&propertyValue=%ED%A0%80', { as: t }), 400);
  });

  const item = JSON.stringify({ item: { name: 'Case' }, variants: [{ currency: 'AUD', price: 1 }] });
  for (const ct of [
    'Application/JSON',
    'APPLICATION/JSON; CHARSET=UTF-8',
    'application/json;charset="utf-8"',
    'application/json ; charset=utf-8',
  ]) {
    it(`accepts Content-Type ${ct}`, async () => {
      const t = await ctx().createTenant();
      const res = await ctx().request('POST', '/api/v1/items', { as: t, body: item, headers: { 'content-type': ct } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });
  }
  for (const ct of [
    'application/json;;',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'application/json; charset=',
    'application/json; foo',
    'application/json; charset=utf-8; charset=latin1',
    'application/json/x',
    ';',
    'application/ json',
  ]) {
    it(`answers 415 for Content-Type ${JSON.stringify(ct)}, never 500`, async () => {
      const t = await ctx().createTenant();
      assertRefused(
        await ctx().request('POST', '/api/v1/items', { as: t, body: item, headers: { 'content-type': ct } }),
        415,
      );
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: t })).body.total, 0);
    });
  }
});

describeEachBackend('Hostile input: HEAD', (ctx) => {
  it('answers HEAD on every GET route like GET, without a body', async () => {
    const { t, f, orderId } = await setup(ctx());
    const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId } });
    const urls = [
      '/api/v1/orders',
      `/api/v1/orders/${orderId}`,
      '/api/v1/items',
      '/api/v1/buyers',
      `/api/v1/buyers/${f.buyerId}`,
      '/api/v1/invoices',
      `/api/v1/invoices/${invoice.body.id}`,
      '/api/v1/pricing',
      '/healthz',
      '/openapi.json',
    ];
    for (const url of urls) {
      // HEAD first, before any GET has rendered (and cached) the resource.
      const head = await ctx().request('HEAD', url, { as: t });
      const get = await ctx().request('GET', url, { as: t });
      assert.equal(head.status, get.status, `HEAD ${url}: ${head.status}`);
      const typed = await ctx().request('HEAD', url, { as: t, headers: { 'content-type': 'application/json' } });
      assert.equal(typed.status, get.status, `HEAD ${url} with a Content-Type: ${typed.status}`);
      assert.equal(head.body, undefined, url);
      assert.equal(head.headers['content-type'], get.headers['content-type'], url);
      if (get.headers.etag) assert.equal(head.headers.etag, get.headers.etag, url);
    }
    assertRefused(await ctx().request('GET', '/api/v1/orders/ord_01jd5x8m2k3n4p5q6r7s8t9v0w', { as: t }), 404);
    assert.equal((await ctx().request('HEAD', '/api/v1/orders/ord_01jd5x8m2k3n4p5q6r7s8t9v0w', { as: t })).status, 404);
    assert.equal((await ctx().request('HEAD', '/api/v1/orders')).status, 401);
  });
});

describeEachBackend('Hostile input: the simulated buyer', (ctx) => {
  it('refuses bodies out of bounds with field errors, a live key with 403, and never makes an order for them', async () => {
    const { t } = await setup(ctx());
    const sandbox = await ctx().createSandbox(t);
    const url = '/api/v1/sandbox/simulations/orders';
    for (const [body, field] of [
      [{ count: 101 }, 'count'],
      [{ count: -1 }, 'count'],
      [{ count: '3' }, 'count'],
      [{ lines: 0 }, 'lines'],
      [{ lines: 1e300 }, 'lines'],
      [{ buyerId: 'b'.repeat(65) }, 'buyerId'],
      [{ buyerId: 5 }, 'buyerId'],
    ] as const)
      assertRefused(await ctx().request('POST', url, { as: sandbox, body }), 400, field);
    assertRefused(await ctx().request('POST', url, { as: sandbox, body: [] }), 400);
    assertRefused(await ctx().request('POST', url, { as: sandbox, body: { count: 1, extra: true } }), 400);
    assertRefused(await ctx().request('POST', url, { as: sandbox, body: { buyerId: '%00' } }), 404);
    assertRefused(await ctx().request('POST', url, { as: t, body: { count: 1 } }), 403);
    assert.equal((await ctx().request('GET', '/api/v1/orders', { as: sandbox })).body.items.length, 0);
  });
});
