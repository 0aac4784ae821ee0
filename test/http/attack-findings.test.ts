import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createApp, loggerOptions } from '../../src/app.ts';
import { listApiKeys } from '../../src/businesses/repository.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { createTestContext, describeEachBackend, type TestContext } from '../helpers/context.ts';

// Defects found by probing the security work from outside (issue 13, second round).

/** An app on the context's database whose log lines are kept, as the server writes them. */
async function loggedApp(ctx: TestContext) {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const app = await createApp({
    db: ctx.db,
    config: ctx.config,
    rateLimiter: null,
    logger: { ...loggerOptions('info'), stream } as never,
  });
  await app.ready();
  return { app, lines };
}

describeEachBackend('Every answer is sent once', (ctx) => {
  it('a successful write logs no error and counts no 500, on every write route', async () => {
    const t = await ctx().createTenant();
    const { app, lines } = await loggedApp(ctx());
    const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...t.headers, 'content-type': 'application/json', ...headers },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.statusCode, body: res.body ? res.json() : undefined };
    };
    const item = await call('POST', '/api/v1/items', {
      item: { name: 'W' },
      variants: [{ currency: 'AUD', price: 1 }],
    });
    assert.equal(item.status, 201);
    assert.equal((await call('PATCH', `/api/v1/items/${item.body.id}`, { name: 'W2' })).status, 200);
    const buyer = await call('POST', '/api/v1/buyers', { buyer: { name: 'B' } }, { 'idempotency-key': 'k-1' });
    assert.equal(buyer.status, 201);
    assert.equal(
      (await call('POST', '/api/v1/buyers', { buyer: { name: 'B' } }, { 'idempotency-key': 'k-1' })).status,
      201,
    );
    assert.equal((await call('PATCH', `/api/v1/buyers/${buyer.body.id}`, { buyer: { name: 'B2' } })).status, 200);
    assert.equal((await call('POST', '/api/v1/pricing', { itemListData: { label: 'L' }, entries: [] })).status, 201);
    const order = await call('POST', `/api/v1/buyers/${buyer.body.id}/orders`, {
      expectedDeliveryAt: '2030-01-01T00:00:00Z',
      orderItems: [{ itemVariantId: item.body.variantIds[0], quantity: 1 }],
    });
    assert.equal(order.status, 201);
    assert.equal((await call('PATCH', `/api/v1/orders/${order.body.id}`, { order: { notes: 'n' } })).status, 200);
    const invoice = await call('POST', '/api/v1/invoices', { orderId: order.body.id });
    assert.equal(invoice.status, 201);
    assert.equal((await call('PATCH', `/api/v1/invoices/${invoice.body.id}`, { notes: 'n' })).status, 200);
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    await app.close();
    const errors = lines.filter((l) => l.level >= 40);
    assert.deepEqual(
      errors.map((l) => `${l.msg} ${l.err?.code ?? l.code ?? ''}`),
      [],
    );
    assert.ok(
      !/status="500"/.test(metrics.body),
      metrics.body
        .split('\n')
        .filter((l) => l.includes('status="500"'))
        .join('\n'),
    );
  });
});

describeEachBackend('Text checks look at the text, not at its escapes', (ctx) => {
  it('accepts an escaped backslash before u0000, and refuses a real NUL naming its field', async () => {
    const t = await ctx().createTenant();
    const literal = '{"item":{"name":"literal \\\\u0000 text"},"variants":[{"currency":"AUD","price":1}]}';
    const ok = await ctx().request('POST', '/api/v1/items', { as: t, body: literal });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(
      (await ctx().request('GET', `/api/v1/items/${ok.body.id}`, { as: t })).body.name,
      'literal \\u0000 text',
    );
    const real = '{"item":{"name":"a\\u0000b"},"variants":[{"currency":"AUD","price":1}]}';
    const refused = await ctx().request('POST', '/api/v1/items', { as: t, body: real });
    assert.equal(refused.status, 400);
    assert.match(refused.body.message, /NUL/);
    assert.ok(refused.body.fieldErrors['item.name'], JSON.stringify(refused.body));
  });

  it('refuses property numbers that cannot be stored as sent', async () => {
    const t = await ctx().createTenant();
    for (const raw of ['1e309', '-1e309', '123456789012345678901234567890', '9007199254740993']) {
      const body = `{"item":{"name":"N","properties":{"num":${raw}}},"variants":[{"currency":"AUD","price":1}]}`;
      const res = await ctx().request('POST', '/api/v1/items', { as: t, body });
      assert.equal(res.status, 400, `${raw}: ${JSON.stringify(res.body)}`);
      assert.ok(res.body.fieldErrors?.['item.properties'], JSON.stringify(res.body));
    }
    const fine = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: '{"item":{"name":"N","properties":{"num":9007199254740991,"f":0.1,"big":1e21,"round":123450000000000000000}},"variants":[{"currency":"AUD","price":1}]}',
    });
    assert.equal(fine.status, 201, JSON.stringify(fine.body));
  });
});

describeEachBackend('Authentication comes before every other check on the API', (ctx) => {
  it('answers 401, not 400, to a stranger whose URL has a NUL or a broken query', async () => {
    for (const url of ['/api/v1/items?propertyPath=a&propertyValue=%00', '/api/v1/items?a=%ff', '/api/v1/items/%00']) {
      const res = await ctx().request('GET', url);
      assert.equal(res.status, 401, `${url}: ${JSON.stringify(res.body)}`);
    }
  });
});

describe('[sqlite] A read while another process holds the write lock', () => {
  let now = Date.parse('2026-06-01T00:00:00Z');
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext('sqlite', { clock: () => now });
  });
  after(async () => {
    await ctx?.close();
  });

  it('is answered from the database it can read, not refused because of last-used bookkeeping', async () => {
    const t = await ctx.createTenant();
    assert.equal((await ctx.request('GET', '/api/v1/items', { as: t })).status, 200);
    const [key] = await listApiKeys(ctx.db, t.businessId);
    assert.ok(key.lastUsedAt, 'the first use is recorded');
    const other = createDatabase(ctx.database.url);
    await sql`begin exclusive`.execute(other.db);
    try {
      now += 5000; // past the authentication cache, within the minute of last-used precision
      const started = Date.now();
      const res = await ctx.request('GET', '/api/v1/items', { as: t });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
    } finally {
      await sql`commit`.execute(other.db);
      await other.close();
    }
    now += 61_000;
    assert.equal((await ctx.request('GET', '/api/v1/items', { as: t })).status, 200);
    const [later] = await listApiKeys(ctx.db, t.businessId);
    assert.equal(later.lastUsedAt, new Date(now).toISOString(), 'a use a minute later is recorded again');
  });
});
