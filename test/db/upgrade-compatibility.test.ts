import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

/**
 * Validation applies to what a request sends, never to values an earlier release stored: a whole
 * number with more than 15 significant digits (a 64-bit ERP id an older release took) stays in
 * place, and every PATCH of the record still works (issue 44).
 */
const BIG = '12345678901234567000';
const stored = (namespace: string) => `{"${namespace}":{"id":${BIG}}}`;

describeEachBackend('values stored by an earlier release', (ctx) => {
  it('leave orders, their items, items, variants, buyers and invoices writable, and are kept as they were', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const invoice = (await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } })).body;
    const itemId = order.orderItems[0].itemListEntry.itemVariant.itemId;
    const db = ctx().db;
    // As an earlier release left them: JSON the checks of today refuse.
    await db
      .updateTable('orders')
      .set({ properties: stored('erp') })
      .where('id', '=', order.id)
      .execute();
    await db
      .updateTable('order_items')
      .set({ properties: stored('erp') })
      .where('order_id', '=', order.id)
      .execute();
    await db
      .updateTable('items')
      .set({ properties: stored('erp') })
      .where('id', '=', itemId)
      .execute();
    await db
      .updateTable('item_variants')
      .set({ properties: stored('erp') })
      .where('id', '=', f.variantIds[0])
      .execute();
    await db
      .updateTable('phantoms')
      .set({ properties: stored('erp'), buyer_info: stored('erp') })
      .where('id', '=', f.buyerId)
      .execute();
    await db
      .updateTable('invoices')
      .set({ properties: stored('erp') })
      .where('id', '=', invoice.id)
      .execute();

    const patches: Array<[string, unknown]> = [
      [`/api/v1/orders/${order.id}`, { order: { notes: 'only the notes' } }],
      [`/api/v1/orders/${order.id}`, { order: { properties: { shop: { ref: 'A-1' } } } }],
      [
        `/api/v1/orders/${order.id}`,
        { updateOrderItems: [{ id: order.orderItems[0].id, properties: { shop: { line: 1 } } }] },
      ],
      [`/api/v1/items/${itemId}`, { description: 'only the description' }],
      [`/api/v1/items/${itemId}`, { properties: { shop: { ref: 'I-1' } } }],
      [`/api/v1/items/${itemId}`, { updateVariants: [{ id: f.variantIds[0], properties: { shop: { ref: 'V-1' } } }] }],
      [`/api/v1/buyers/${f.buyerId}`, { buyer: { name: 'Renamed' } }],
      [`/api/v1/buyers/${f.buyerId}`, { buyer: { properties: { shop: { ref: 'B-1' } }, buyerInfo: { notes: 'x' } } }],
      [`/api/v1/invoices/${invoice.id}`, { properties: { shop: { ref: 'N-1' } } }],
    ];
    for (const [url, body] of patches) {
      const res = await ctx().request('PATCH', url, { as: t, body });
      assert.equal(res.status, 200, `${url} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    }
    const raw = async (table: 'orders' | 'items' | 'invoices', id: string) =>
      JSON.stringify(
        (await db.selectFrom(table).select('properties').where('id', '=', id).executeTakeFirstOrThrow()).properties,
      );
    for (const [table, id] of [
      ['orders', order.id],
      ['items', itemId],
      ['invoices', invoice.id],
    ] as const) {
      assert.ok((await raw(table, id)).includes(BIG), `${table}: the stored number is kept digit for digit`);
    }
    const shown = (await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t })).body;
    assert.deepEqual(shown.properties.shop, { ref: 'A-1' });
    assert.equal(shown.notes, 'only the notes');

    // What a request sends is still checked.
    const sent = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      body: { order: { properties: { erp: { other: Number(BIG) } } } },
    });
    assert.equal(sent.status, 400);
  });
});

describeEachBackend('requests an earlier release answered 2xx', (ctx) => {
  it("lists orders by the order guide's statuses: PREPARING as PACKED, SHIPPED as IN_TRANSIT, CANCELLED as none", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const ids: Record<string, string> = {};
    for (const status of ['PACKED', 'IN_TRANSIT', 'ACCEPTED'])
      ids[status] = (await createOrder(ctx(), t, f, { status })).id;
    const list = async (status: string) => {
      const res = await ctx().request('GET', `/api/v1/orders?status=${status}`, { as: t });
      assert.equal(res.status, 200, `${status}: ${JSON.stringify(res.body)}`);
      return { ids: res.body.items.map((o: { id: string }) => o.id), total: res.body.total };
    };
    assert.deepEqual(await list('PREPARING'), { ids: [ids.PACKED], total: 1 });
    assert.deepEqual(await list('SHIPPED'), { ids: [ids.IN_TRANSIT], total: 1 });
    assert.deepEqual(await list('CANCELLED'), { ids: [], total: 0 });
    // Writes still take only the contract's first list.
    const write = await ctx().request('PATCH', `/api/v1/orders/${ids.ACCEPTED}`, {
      as: t,
      body: { order: { status: 'SHIPPED' } },
    });
    assert.equal(write.status, 400);
  });

  it("takes invoices' includeDeleted, answered with Deprecation and Sunset headers", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const invoice = (await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } })).body;
    for (const value of ['true', 'false']) {
      const res = await ctx().request('GET', `/api/v1/invoices?includeDeleted=${value}`, { as: t });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.items.map((i: { id: string }) => i.id),
        [invoice.id],
      );
      assert.match(String(res.headers.deprecation), /^@\d+$/);
      assert.ok(Date.parse(String(res.headers.sunset)) > Date.parse('2027-01-01'), String(res.headers.sunset));
    }
    const plain = await ctx().request('GET', '/api/v1/invoices', { as: t });
    assert.equal(plain.headers.deprecation, undefined);
  });
});
