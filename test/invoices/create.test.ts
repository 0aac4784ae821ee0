import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, getOrder, ISO_MS, patchOrder } from '../helpers/orders.ts';

const INVOICE_KEYS = [
  'createdAt',
  'currency',
  'deletedAt',
  'dueAt',
  'id',
  'invoiceLineItems',
  'invoiceNumber',
  'notes',
  'orderId',
  'partnershipId',
  'properties',
  'reference',
  'shipmentId',
  'status',
  'totalAmount',
  'updatedAt',
  'version',
];
const LINE_KEYS = [
  'createdAt',
  'currency',
  'description',
  'id',
  'invoiceId',
  'itemVariantId',
  'lineAmount',
  'lineNumber',
  'orderItemId',
  'quantity',
  'unitAmount',
  'updatedAt',
];

const postInvoice = (ctx: TestContext, as: Tenant, body: unknown, headers?: Record<string, string>) =>
  ctx.request('POST', '/api/v1/invoices', { as, body, headers });
const getInvoice = (ctx: TestContext, as: Tenant, id: string) => ctx.request('GET', `/api/v1/invoices/${id}`, { as });

async function invoiceFor(ctx: TestContext, as: Tenant) {
  const order = await createOrder(ctx, as, await createFixture(ctx, as));
  const res = await postInvoice(ctx, as, { orderId: order.id });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

describeEachBackend('POST /api/v1/invoices', (ctx) => {
  // The body names the owner's order, so the other-tenant case is its own test below.
  securityCases(ctx, { method: 'POST', url: () => '/api/v1/invoices', body: { orderId: 'ord_x' }, crossTenant: false });

  it("copies the order's items into line items with decimal amounts, numbers INV-000001, answers 201 with an ETag", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 2 },
        { itemVariantId: f.variantIds[2], quantity: 3 },
        { itemVariantId: f.variantIds[1], quantity: 0.3, price: 0.1 },
      ],
    });
    const res = await postInvoice(ctx(), t, { orderId: order.id });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.headers.etag, '"1"');
    const inv = res.body;
    assert.deepEqual(Object.keys(inv).sort(), INVOICE_KEYS);
    assert.match(inv.id, /^inv_/);
    assert.deepEqual(
      [inv.invoiceNumber, inv.status, inv.orderId, inv.partnershipId, inv.currency, inv.version],
      ['INV-000001', 'DRAFT', order.id, f.partnershipId, 'AUD', 1],
    );
    assert.deepEqual(
      [inv.reference, inv.notes, inv.dueAt, inv.properties, inv.deletedAt],
      [null, null, null, null, null],
    );
    assert.match(inv.createdAt, ISO_MS);
    assert.equal(inv.createdAt, inv.updatedAt);
    // 20 + 0.3 + 0.03 in decimal: binary floats would give 0.30000000000000004 for 3 × 0.1.
    assert.equal(inv.totalAmount, '20.33');
    const lines = inv.invoiceLineItems;
    for (const l of lines) assert.deepEqual(Object.keys(l).sort(), LINE_KEYS);
    assert.ok(lines.every((l: any) => /^ili_/.test(l.id) && l.invoiceId === inv.id));
    const [a, b, c] = order.orderItems;
    assert.deepEqual(
      lines.map((l: any) => [
        l.orderItemId,
        l.itemVariantId,
        l.quantity,
        l.unitAmount,
        l.lineAmount,
        l.currency,
        l.lineNumber,
      ]),
      [
        [a.id, f.variantIds[0], 2, '10.00', '20.00', 'AUD', 1],
        [b.id, f.variantIds[2], 3, '0.10', '0.30', 'AUD', 2],
        [c.id, f.variantIds[1], 0.3, '0.10', '0.03', 'AUD', 3],
      ],
    );
    assert.match(lines[0].description, /^Widget .* - Small$/);
    assert.match(lines[1].description, /^Widget .* - Tiny$/);
    assert.deepEqual((await getInvoice(ctx(), t, inv.id)).body, inv);
  });

  it('takes reference, notes, dueAt (any RFC 3339) and properties', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const res = await postInvoice(ctx(), t, {
      orderId: order.id,
      reference: 'PO-9',
      notes: 'Net 30',
      dueAt: '2031-01-01T10:00:00+10:00',
      properties: { xero: { contactId: 'c1' } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(
      [res.body.reference, res.body.notes, res.body.dueAt, res.body.properties],
      ['PO-9', 'Net 30', '2031-01-01T00:00:00.000Z', { xero: { contactId: 'c1' } }],
    );
  });

  it('describes a single-variant item by its name alone (its variant is named Default)', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t, [{ variantName: 'Default', currency: 'AUD', price: 3 }]);
    const order = await createOrder(ctx(), t, f);
    const res = await postInvoice(ctx(), t, { orderId: order.id });
    assert.match(res.body.invoiceLineItems[0].description, /^Widget [\d.]+$/);
  });

  it('numbers invoices per business, uniquely under 10 concurrent creations for different orders', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const orders = [];
    for (let i = 0; i < 10; i++) orders.push(await createOrder(ctx(), t, f));
    const results = await Promise.all(orders.map((o) => postInvoice(ctx(), t, { orderId: o.id })));
    assert.deepEqual(
      results.map((r) => r.status),
      Array(10).fill(201),
    );
    assert.deepEqual(
      results.map((r) => r.body.invoiceNumber).sort(),
      Array.from({ length: 10 }, (_, i) => `INV-${String(i + 1).padStart(6, '0')}`),
    );
    const other = await ctx().createTenant();
    assert.equal((await invoiceFor(ctx(), other)).invoiceNumber, 'INV-000001');
  });

  it('one live invoice per order: 10 concurrent creations give one invoice and nine 409s', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const results = await Promise.all(Array.from({ length: 10 }, () => postInvoice(ctx(), t, { orderId: order.id })));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, ...Array(9).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) assert.equal(r.body.errorCode, 'CONFLICT');
    const rows = await ctx().db.selectFrom('invoices').select('id').where('order_id', '=', order.id).execute();
    assert.equal(rows.length, 1);
  });

  it('a second invoice for an order is 409 CONFLICT, unless the first is VOIDED or deleted', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const first = (await postInvoice(ctx(), t, { orderId: order.id })).body;
    const again = await postInvoice(ctx(), t, { orderId: order.id });
    assert.equal(again.status, 409);
    assert.equal(again.body.errorCode, 'CONFLICT');
    assert.match(again.body.message, /INV-000001/);
    for (const status of ['PAID', 'DELETED', 'CREDITED']) {
      await ctx().request('PATCH', `/api/v1/invoices/${first.id}`, { as: t, body: { status } });
      assert.equal((await postInvoice(ctx(), t, { orderId: order.id })).status, 409, status);
    }
    await ctx().request('PATCH', `/api/v1/invoices/${first.id}`, { as: t, body: { status: 'VOIDED' } });
    const second = await postInvoice(ctx(), t, { orderId: order.id });
    assert.equal(second.status, 201);
    assert.equal(second.body.invoiceNumber, 'INV-000002');
    // There is no invoice DELETE route; a soft-deleted row (deletedAt set) frees the order just the same.
    await ctx()
      .db.updateTable('invoices')
      .set({ deleted_at: new Date().toISOString() })
      .where('id', '=', second.body.id)
      .execute();
    assert.equal((await getInvoice(ctx(), t, second.body.id)).status, 404);
    assert.equal((await postInvoice(ctx(), t, { orderId: order.id })).status, 201);
  });

  it('a missing, deleted or foreign order is 404 Order not found', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const foreign = await createOrder(ctx(), other, await createFixture(ctx(), other));
    const deleted = await createOrder(ctx(), t, await createFixture(ctx(), t));
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${deleted.id}`, { as: t })).status, 204);
    for (const orderId of ['ord_missing', deleted.id, foreign.id]) {
      const res = await postInvoice(ctx(), t, { orderId });
      assert.equal(res.status, 404, orderId);
      assert.deepEqual(
        [res.body.errorCode, res.body.message, res.body.error],
        ['NOT_FOUND', 'Order not found', 'Order not found'],
      );
      assert.ok(!JSON.stringify(res.body).includes(other.businessId));
    }
    assert.equal(
      (await ctx().db.selectFrom('invoices').select('id').where('business_id', '=', t.businessId).execute()).length,
      0,
    );
  });

  it('an order whose items were all removed has nothing to invoice (400)', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    await patchOrder(ctx(), t, order.id, { deleteOrderItems: [order.orderItems[0].id] });
    const res = await postInvoice(ctx(), t, { orderId: order.id });
    assert.equal(res.status, 400);
    assert.ok(res.body.fieldErrors.orderId);
  });

  it('rejects unknown keys, a missing orderId and bad dueAt by path', async () => {
    const t = await ctx().createTenant();
    const res = await postInvoice(ctx(), t, { colour: 1, dueAt: 'soon', properties: [] });
    assert.equal(res.status, 400);
    const fe = res.body.fieldErrors;
    assert.equal(fe.colour, 'Unrecognized key');
    assert.equal(fe.orderId, 'Required');
    assert.ok(fe.dueAt && fe.properties, JSON.stringify(fe));
  });

  it('leaves the order untouched', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    await postInvoice(ctx(), t, { orderId: order.id });
    assert.deepEqual((await getOrder(ctx(), t, order.id)).body, order);
  });

  it('is idempotent with an Idempotency-Key: one invoice, the same answer replayed', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const first = await postInvoice(ctx(), t, { orderId: order.id }, { 'idempotency-key': 'inv-1' });
    const again = await postInvoice(ctx(), t, { orderId: order.id }, { 'idempotency-key': 'inv-1' });
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers.etag, '"1"');
    assert.deepEqual(again.body, first.body);
    const reused = await postInvoice(ctx(), t, { orderId: order.id, notes: 'other' }, { 'idempotency-key': 'inv-1' });
    assert.equal(reused.status, 422);
    assert.equal(
      (await ctx().db.selectFrom('invoices').select('id').where('order_id', '=', order.id).execute()).length,
      1,
    );
  });
});

describeEachBackend('GET /api/v1/invoices/:id', (ctx) => {
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/invoices/${(await invoiceFor(c, owner)).id}` });

  it('returns the invoice with its line items and an ETag; 404 Invoice not found when missing', async () => {
    const t = await ctx().createTenant();
    const inv = await invoiceFor(ctx(), t);
    const res = await getInvoice(ctx(), t, inv.id);
    assert.equal(res.status, 200);
    assert.equal(res.headers.etag, '"1"');
    assert.deepEqual(res.body, inv);
    const missing = await getInvoice(ctx(), t, 'inv_missing');
    assert.equal(missing.status, 404);
    assert.deepEqual(
      [missing.body.errorCode, missing.body.message, missing.body.error],
      ['NOT_FOUND', 'Invoice not found', 'Invoice not found'],
    );
  });

  it('keeps its line items when the order later changes or is deleted', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const inv = (await postInvoice(ctx(), t, { orderId: order.id })).body;
    assert.equal((await patchOrder(ctx(), t, order.id, { deleteOrderItems: [order.orderItems[0].id] })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${order.id}`, { as: t })).status, 204);
    assert.deepEqual((await getInvoice(ctx(), t, inv.id)).body, inv);
  });
});
