import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, getOrder } from '../helpers/orders.ts';

const STATUSES = [
  'DELETED',
  'DRAFT',
  'AUTHORISED',
  'PARTIALLY_PAID',
  'PAID',
  'OVERPAID',
  'OVERDUE',
  'VOIDED',
  'DEFAULTED',
  'CREDITED',
  'REFUNDED',
];

async function createInvoice(ctx: TestContext, as: Tenant, orderId?: string) {
  const id = orderId ?? (await createOrder(ctx, as, await createFixture(ctx, as))).id;
  const res = await ctx.request('POST', '/api/v1/invoices', { as, body: { orderId: id } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

const patchInvoice = (ctx: TestContext, as: Tenant, id: string, body: unknown, headers?: Record<string, string>) =>
  ctx.request('PATCH', `/api/v1/invoices/${id}`, { as, body, headers });
const getInvoice = (ctx: TestContext, as: Tenant, id: string) => ctx.request('GET', `/api/v1/invoices/${id}`, { as });

describeEachBackend('PATCH /api/v1/invoices/:id', (ctx) => {
  securityCases(ctx, {
    method: 'PATCH',
    url: async (c, owner) => `/api/v1/invoices/${(await createInvoice(c, owner)).id}`,
    body: { status: 'PAID' },
  });

  it('updates status, reference, notes and dueAt; returns the full invoice with a new version and ETag', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const res = await patchInvoice(ctx(), t, inv.id, {
      status: 'AUTHORISED',
      reference: 'X-1',
      notes: 'n',
      dueAt: '2031-02-03T04:05:06+01:00',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.headers.etag, '"2"');
    const b = res.body;
    assert.deepEqual(
      [b.id, b.status, b.reference, b.notes, b.dueAt, b.version],
      [inv.id, 'AUTHORISED', 'X-1', 'n', '2031-02-03T03:05:06.000Z', 2],
    );
    assert.deepEqual(b.invoiceLineItems, inv.invoiceLineItems);
    assert.deepEqual(
      [b.totalAmount, b.invoiceNumber, b.createdAt],
      [inv.totalAmount, inv.invoiceNumber, inv.createdAt],
    );
    assert.ok(b.updatedAt > inv.updatedAt);
    const got = await getInvoice(ctx(), t, inv.id);
    assert.deepEqual(got.body, b);
    assert.equal(got.headers.etag, '"2"');
    const cleared = await patchInvoice(ctx(), t, inv.id, { reference: null, notes: null, dueAt: null });
    assert.deepEqual(
      [cleared.body.reference, cleared.body.notes, cleared.body.dueAt, cleared.body.version],
      [null, null, null, 3],
    );
  });

  it('accepts every one of the 11 reference statuses, in any order (no transition table)', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    for (const status of [...STATUSES].reverse()) {
      const res = await patchInvoice(ctx(), t, inv.id, { status });
      assert.equal(res.status, 200, status);
      assert.equal(res.body.status, status);
    }
  });

  it('other statuses give 400 with fieldErrors.status, and nothing changes', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    for (const status of ['SUBMITTED', 'paid', 1]) {
      const res = await patchInvoice(ctx(), t, inv.id, { status, notes: 'no' });
      assert.equal(res.status, 400);
      assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
      assert.ok(res.body.fieldErrors.status, JSON.stringify(res.body));
    }
    const res = await patchInvoice(ctx(), t, inv.id, { status: 'SUBMITTED' });
    assert.match(
      res.body.fieldErrors.status,
      /^Invalid enum value\. Expected 'DELETED' \| 'DRAFT' \| .* 'REFUNDED', received 'SUBMITTED'$/,
    );
    assert.deepEqual((await getInvoice(ctx(), t, inv.id)).body, inv);
  });

  it('unknown keys give 400; an empty payload gives 400 No valid fields provided for update', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const unknown = await patchInvoice(ctx(), t, inv.id, { status: 'PAID', totalAmount: 5, invoiceLineItems: [] });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.fieldErrors.totalAmount, 'Unrecognized key');
    assert.equal(unknown.body.fieldErrors.invoiceLineItems, 'Unrecognized key');
    const empty = await patchInvoice(ctx(), t, inv.id, {});
    assert.equal(empty.status, 400);
    assert.deepEqual(
      [empty.body.errorCode, empty.body.message, empty.body.error],
      ['VALIDATION_ERROR', 'No valid fields provided for update', 'No valid fields provided for update'],
    );
    assert.equal((await getInvoice(ctx(), t, inv.id)).body.version, 1);
  });

  it('properties deep-merge exactly like orders: namespaces and nested fields kept, arrays replaced, null stored', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    await patchInvoice(ctx(), t, inv.id, { properties: { unleashed: { guid: '123' } } });
    const a = await patchInvoice(ctx(), t, inv.id, { properties: { xero: { invoiceId: 'x-1' } } });
    assert.deepEqual(a.body.properties, { unleashed: { guid: '123' }, xero: { invoiceId: 'x-1' } });
    const b = await patchInvoice(ctx(), t, inv.id, {
      properties: { xero: { status: 'PAID', tags: ['a'] }, unleashed: { guid: null } },
    });
    assert.deepEqual(b.body.properties, {
      unleashed: { guid: null },
      xero: { invoiceId: 'x-1', status: 'PAID', tags: ['a'] },
    });
    const c = await patchInvoice(ctx(), t, inv.id, { properties: { xero: { tags: ['b'] } } });
    assert.deepEqual(c.body.properties.xero.tags, ['b']);
    const bad = await patchInvoice(ctx(), t, inv.id, { properties: { ['__proto__']: { x: 1 } } });
    assert.equal(bad.status, 400);
  });

  it('bounds merged properties like orders: many small merges cannot grow past 64 KiB', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const chunk = 'x'.repeat(30_000);
    assert.equal((await patchInvoice(ctx(), t, inv.id, { properties: { a: chunk } })).status, 200);
    assert.equal((await patchInvoice(ctx(), t, inv.id, { properties: { b: chunk } })).status, 200);
    const over = await patchInvoice(ctx(), t, inv.id, { properties: { c: chunk } });
    assert.equal(over.status, 400);
    assert.match(over.body.fieldErrors.properties, /^Once merged, properties/);
  });

  it('never touches the order: status changes leave its phase, status and version alone', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const inv = await createInvoice(ctx(), t, order.id);
    for (const status of ['PAID', 'VOIDED', 'REFUNDED'])
      assert.equal((await patchInvoice(ctx(), t, inv.id, { status })).status, 200);
    assert.deepEqual((await getOrder(ctx(), t, order.id)).body, order);
  });

  it('un-voiding is 409 when the order has another live invoice, and the invoice stays VOIDED', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const first = await createInvoice(ctx(), t, order.id);
    await patchInvoice(ctx(), t, first.id, { status: 'VOIDED' });
    const second = await createInvoice(ctx(), t, order.id);
    const res = await patchInvoice(ctx(), t, first.id, { status: 'DRAFT', notes: 'revive' });
    assert.equal(res.status, 409);
    assert.equal(res.body.errorCode, 'CONFLICT');
    assert.match(res.body.message, new RegExp(second.invoiceNumber));
    const after = (await getInvoice(ctx(), t, first.id)).body;
    assert.deepEqual([after.status, after.notes, after.version], ['VOIDED', null, 2]);
    // Other edits of a VOIDED invoice are fine, and so is un-voiding once the other is VOIDED.
    assert.equal((await patchInvoice(ctx(), t, first.id, { notes: 'kept void' })).status, 200);
    await patchInvoice(ctx(), t, second.id, { status: 'VOIDED' });
    assert.equal((await patchInvoice(ctx(), t, first.id, { status: 'DRAFT' })).status, 200);
  });

  it('the database refuses a second live invoice for an order even if a write path forgot to check', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const row = await ctx().db.selectFrom('invoices').selectAll().where('id', '=', inv.id).executeTakeFirstOrThrow();
    const copy = {
      id: `${row.id}x`,
      business_id: row.business_id,
      partnership_id: row.partnership_id,
      order_id: row.order_id,
      invoice_number: 'INV-X',
      status: 'DRAFT',
      currency: row.currency,
      total_amount: '0',
      version: 1,
      created_at: inv.createdAt,
      updated_at: inv.updatedAt,
    };
    await assert.rejects(ctx().db.insertInto('invoices').values(copy).execute());
    await ctx()
      .db.insertInto('invoices')
      .values({ ...copy, status: 'VOIDED' })
      .execute();
  });

  it('404 Invoice not found for a missing or deleted invoice', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    await ctx()
      .db.updateTable('invoices')
      .set({ deleted_at: new Date().toISOString() })
      .where('id', '=', inv.id)
      .execute();
    for (const id of ['inv_missing', inv.id]) {
      const res = await patchInvoice(ctx(), t, id, { status: 'PAID' });
      assert.equal(res.status, 404);
      assert.deepEqual([res.body.errorCode, res.body.error], ['NOT_FOUND', 'Invoice not found']);
    }
  });

  it('If-Match: a stale version gives 412 and changes nothing; the current one applies', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const ok = await patchInvoice(ctx(), t, inv.id, { notes: 'one' }, { 'if-match': '"1"' });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.etag, '"2"');
    const stale = await patchInvoice(ctx(), t, inv.id, { notes: 'two' }, { 'if-match': '"1"' });
    assert.equal(stale.status, 412);
    assert.equal(stale.body.errorCode, 'PRECONDITION_FAILED');
    const after = (await getInvoice(ctx(), t, inv.id)).body;
    assert.deepEqual([after.notes, after.version], ['one', 2]);
    assert.equal((await patchInvoice(ctx(), t, inv.id, { notes: 'three' }, { 'if-match': 'W/"2"' })).status, 200);
    assert.equal((await patchInvoice(ctx(), t, inv.id, { notes: 'four' }, { 'if-match': '*' })).status, 200);
  });

  it('serialises concurrent PATCHes: 10 concurrent property merges all land', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => patchInvoice(ctx(), t, inv.id, { properties: { sync: { [`k${i}`]: i } } })),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(10).fill(200),
    );
    const after = (await getInvoice(ctx(), t, inv.id)).body;
    assert.equal(Object.keys(after.properties.sync).length, 10);
    assert.equal(after.version, 11);
  });

  it('replays a PATCH sent again with the same Idempotency-Key', async () => {
    const t = await ctx().createTenant();
    const inv = await createInvoice(ctx(), t);
    const body = { status: 'PAID', properties: { xero: { invoiceId: 'x' } } };
    const first = await patchInvoice(ctx(), t, inv.id, body, { 'idempotency-key': 'patch-inv-1' });
    const again = await patchInvoice(ctx(), t, inv.id, body, { 'idempotency-key': 'patch-inv-1' });
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers.etag, '"2"');
    assert.deepEqual(again.body, first.body);
    assert.equal((await getInvoice(ctx(), t, inv.id)).body.version, 2);
  });
});
