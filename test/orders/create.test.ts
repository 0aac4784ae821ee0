import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, DELIVERY, getOrder, ISO_MS, postOrder } from '../helpers/orders.ts';

const ORDER_KEYS = [
  'acknowledgement',
  'createdAt',
  'currency',
  'deletedAt',
  'deliveredAt',
  'deliveryAddress',
  'expectedDeliveryAt',
  'externalReference',
  'id',
  'integrationId',
  'internalReference',
  'membershipId',
  'notes',
  'orderItems',
  'partnershipId',
  'phase',
  'properties',
  'shippedAt',
  'shippedBy',
  'status',
  'totalAmount',
  'updatedAt',
  'version',
];
const ITEM_KEYS = [
  'cost',
  'createdAt',
  'currency',
  'id',
  'itemListEntry',
  'itemListEntryId',
  'lineNumber',
  'orderId',
  'price',
  'properties',
  'quantity',
  'unitOfMeasure',
  'updatedAt',
];

describeEachBackend('POST /api/v1/buyers/:id/orders', (ctx) => {
  securityCases(ctx, {
    method: 'POST',
    url: async (c, owner) => `/api/v1/buyers/${(await createFixture(c, owner)).buyerId}/orders`,
    body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemListEntryId: 'ile_x', quantity: 1 }] },
  });

  it('creates the order with defaults, the full shape, an ETag and SO-000001', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const res = await postOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 2 },
        { itemListEntryId: f.entryIds[1], quantity: 1 },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.headers.etag, '"1"');
    const o = res.body;
    assert.deepEqual(Object.keys(o).sort(), ORDER_KEYS);
    assert.match(o.id, /^ord_/);
    assert.equal(o.partnershipId, f.partnershipId);
    assert.deepEqual(
      [o.phase, o.status, o.internalReference, o.currency, o.totalAmount, o.version],
      ['PENDING', 'UNASSIGNED', 'SO-000001', 'AUD', '22.50', 1],
    );
    assert.deepEqual(
      [
        o.membershipId,
        o.integrationId,
        o.externalReference,
        o.notes,
        o.deliveryAddress,
        o.deliveredAt,
        o.shippedAt,
        o.properties,
        o.deletedAt,
      ],
      [null, null, null, null, null, null, null, null, null],
    );
    assert.equal(o.expectedDeliveryAt, DELIVERY);
    assert.match(o.createdAt, ISO_MS);
    assert.equal(o.createdAt, o.updatedAt);
    const [a, b] = o.orderItems;
    assert.deepEqual(Object.keys(a).sort(), ITEM_KEYS);
    assert.match(a.id, /^oi_/);
    assert.deepEqual(a.itemListEntry, {
      id: f.entryIds[0],
      itemVariantId: f.variantIds[0],
      itemVariant: {
        id: f.variantIds[0],
        itemId: a.itemListEntry.itemVariant.itemId,
        variantName: 'Small',
        sku: 'W-S',
      },
    });
    assert.match(a.itemListEntry.itemVariant.itemId, /^itm_/);
    // Variant unit of measure, else EA; variant cost, else 0; line numbers by position.
    assert.deepEqual(
      [a.lineNumber, a.quantity, a.unitOfMeasure, a.currency, a.price, a.cost],
      [1, 2, 'kg', 'AUD', '10.00', '4.00'],
    );
    assert.deepEqual(
      [b.lineNumber, b.quantity, b.unitOfMeasure, b.currency, b.price, b.cost],
      [2, 1, 'EA', 'AUD', '2.50', '0.00'],
    );
    assert.deepEqual((await getOrder(ctx(), t, o.id)).body, o);
  });

  it('takes the optional fields and explicit item values', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const o = await createOrder(ctx(), t, f, {
      internalReference: 'PO-77',
      externalReference: 'EXT-1',
      notes: 'Back door',
      deliveryAddress: '1 Dock Rd, Sydney',
      membershipId: 'mem_1',
      phase: 'DRAFT',
      status: 'ACCEPTED',
      currency: 'AUD',
      properties: { erp: { id: 1 } },
      expectedDeliveryAt: '2030-01-15T20:30:00+10:00',
      orderItems: [
        {
          itemListEntryId: f.entryIds[0],
          quantity: 1.5,
          unitOfMeasure: 'box',
          price: 7,
          cost: 3,
          lineNumber: 9,
          properties: { colour: 'red' },
        },
      ],
    });
    assert.deepEqual(
      [o.internalReference, o.externalReference, o.notes, o.deliveryAddress, o.membershipId, o.phase, o.status],
      ['PO-77', 'EXT-1', 'Back door', '1 Dock Rd, Sydney', 'mem_1', 'DRAFT', 'ACCEPTED'],
    );
    assert.deepEqual(o.properties, { erp: { id: 1 } });
    assert.equal(o.expectedDeliveryAt, '2030-01-15T10:30:00.000Z');
    const [i] = o.orderItems;
    assert.deepEqual(
      [i.quantity, i.unitOfMeasure, i.price, i.cost, i.lineNumber, i.properties],
      [1.5, 'box', '7.00', '3.00', 9, { colour: 'red' }],
    );
    assert.equal(o.totalAmount, '10.50');
  });

  it('answers with exactly what a later GET shows: items in line order, decimals, properties', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const res = await postOrder(ctx(), t, f, {
      properties: { shop: { id: 1, tags: ['a'] }, none: null },
      orderItems: [
        {
          itemListEntryId: f.entryIds[0],
          quantity: 0.25,
          price: 0.125,
          cost: 0.000001,
          lineNumber: 5,
          properties: { zeta: 1, a: [1, { b: null }], mid: { yy: 1, b: 2 } },
        },
        { itemVariantId: f.variantIds[1], quantity: 3, lineNumber: 2 },
        { itemVariantId: f.variantIds[2], quantity: 1000000 },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.orderItems.map((i: any) => i.lineNumber),
      [2, 3, 5],
    );
    assert.equal(JSON.stringify((await getOrder(ctx(), t, res.body.id)).body), JSON.stringify(res.body));
  });

  it('totals with decimal arithmetic: 0.1 × 3 + 9.9 is exactly 10.20', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const o = await createOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[2], quantity: 3 },
        { itemVariantId: f.variantIds[1], quantity: 1, price: 9.9 },
      ],
    });
    assert.equal(o.totalAmount, '10.20');
    assert.equal(o.orderItems[0].price, '0.10');
  });

  it("prices from the buyer's assigned list, and falls back to the default list when it does not apply", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const list = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: {
        itemListData: { label: 'VIP', globalPriceFactor: 0.5, globalCostFactor: 2 },
        entries: [
          { itemVariantId: f.variantIds[0] },
          { itemVariantId: f.variantIds[1], overrideFlatPrice: 1.25, currency: 'AUD' },
        ],
        partnerships: [f.partnershipId],
      },
    });
    assert.equal(list.status, 201, JSON.stringify(list.body));
    const o = await createOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 1 },
        { itemVariantId: f.variantIds[1], quantity: 2 },
        { itemVariantId: f.variantIds[2], quantity: 1 },
      ],
    });
    assert.deepEqual(
      o.orderItems.map((i: any) => [i.price, i.cost]),
      [
        ['5.00', '8.00'],
        ['1.25', '0.00'],
        ['0.10', '0.05'],
      ],
    );
    assert.notEqual(o.orderItems[0].itemListEntryId, f.entryIds[0]);
    assert.equal(o.orderItems[2].itemListEntryId, f.entryIds[2]);

    const expired = await ctx().createTenant();
    const g = await createFixture(ctx(), expired);
    await ctx().request('POST', '/api/v1/pricing', {
      as: expired,
      body: {
        itemListData: { label: 'Old', globalPriceFactor: 0.5, endDate: '2020-01-01T00:00:00Z' },
        entries: [{ itemVariantId: g.variantIds[0] }],
        partnerships: [g.partnershipId],
      },
    });
    const p = await createOrder(ctx(), expired, g);
    assert.equal(p.orderItems[0].price, '10.00');
    assert.equal(p.orderItems[0].itemListEntryId, g.entryIds[0]);
  });

  it("rounds a list factor's price and cost to 6 decimals, half up, so they can be sent back as read", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const list = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: {
        itemListData: { label: 'Odd', globalPriceFactor: 0.123457, globalCostFactor: 0.333333 },
        entries: [{ itemVariantId: f.variantIds[1] }, { itemVariantId: f.variantIds[2] }],
        partnerships: [f.partnershipId],
      },
    });
    assert.equal(list.status, 201, JSON.stringify(list.body));
    const o = await createOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[1], quantity: 1 },
        { itemVariantId: f.variantIds[2], quantity: 1 },
      ],
    });
    // 2.5 × 0.123457 = 0.3086425; 0.1 × 0.123457 = 0.0123457; 0.05 × 0.333333 = 0.01666665.
    assert.deepEqual(
      o.orderItems.map((i: any) => [i.price, i.cost]),
      [
        ['0.308643', '0.00'],
        ['0.012346', '0.016667'],
      ],
    );
    assert.equal(o.totalAmount, '0.320989');
    const back = await ctx().request('PATCH', `/api/v1/orders/${o.id}`, {
      as: t,
      body: {
        updateOrderItems: o.orderItems.map((i: any) => ({ id: i.id, price: Number(i.price), cost: Number(i.cost) })),
      },
    });
    assert.equal(back.status, 200, JSON.stringify(back.body));
  });

  it("rejects a variant not on the buyer's list, and an entry of another business, with the field path", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const g = await createFixture(ctx(), other);
    const res = await postOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 1 },
        { itemVariantId: g.variantIds[0], quantity: 1 },
        { itemListEntryId: g.entryIds[1], quantity: 1 },
      ],
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.errorCode, 'VALIDATION_ERROR');
    assert.deepEqual(Object.keys(res.body.fieldErrors).sort(), [
      'orderItems.1.itemVariantId',
      'orderItems.2.itemListEntryId',
    ]);
    assert.ok(!JSON.stringify(res.body).includes(other.businessId));
  });

  it('rejects an item with both or neither of itemListEntryId and itemVariantId', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const res = await postOrder(ctx(), t, f, {
      orderItems: [{ itemVariantId: f.variantIds[0], itemListEntryId: f.entryIds[0], quantity: 1 }, { quantity: 1 }],
    });
    assert.equal(res.status, 400);
    assert.deepEqual(Object.keys(res.body.fieldErrors).sort(), ['orderItems.0', 'orderItems.1']);
  });

  it("rejects mixed currencies, a currency unlike the items', and two items for one entry", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t, [
      { currency: 'AUD', price: 1 },
      { variantName: 'US', currency: 'USD', price: 1 },
    ]);
    const mixed = await postOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 1 },
        { itemVariantId: f.variantIds[1], quantity: 1 },
      ],
    });
    assert.equal(mixed.status, 400);
    assert.ok(mixed.body.fieldErrors.orderItems);
    const unlike = await postOrder(ctx(), t, f, { currency: 'EUR' });
    assert.equal(unlike.status, 400);
    assert.ok(unlike.body.fieldErrors.currency);
    const twice = await postOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 1 },
        { itemListEntryId: f.entryIds[0], quantity: 2 },
      ],
    });
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error, 'An order has one item per item list entry: two of these items name the same one');
    assert.deepEqual(twice.body.fieldErrors, {
      'orderItems.1.itemListEntryId':
        'The same item list entry as orderItems.0: send one item with the quantities added up',
    });
  });

  it('validates the body by path: required fields, quantity, unknown keys, empty items', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const res = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: { colour: 'red', orderItems: [{ itemVariantId: f.variantIds[0], quantity: 0, extra: 1 }] },
    });
    assert.equal(res.status, 400);
    const fe = res.body.fieldErrors;
    assert.equal(fe.expectedDeliveryAt, 'Required');
    assert.equal(fe.colour, 'Unrecognized key');
    assert.equal(fe['orderItems.0.extra'], 'Unrecognized key');
    assert.ok(fe['orderItems.0.quantity']);
    const empty = await postOrder(ctx(), t, f, { orderItems: [] });
    assert.equal(empty.status, 400);
    assert.ok(empty.body.fieldErrors.orderItems);
    const count = await ctx()
      .db.selectFrom('orders')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('business_id', '=', t.businessId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 0);
  });

  it('answers 404 Buyer not found for an unknown buyer', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const res = await postOrder(ctx(), t, { ...f, buyerId: 'phm_missing' });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'Buyer not found');
    assert.equal(res.body.hint, undefined);
    // The buyer's partnership id where its own id belongs: said so.
    const partnership = await postOrder(ctx(), t, { ...f, buyerId: f.partnershipId });
    assert.equal(partnership.status, 404);
    assert.equal(partnership.body.message, 'Buyer not found');
    assert.match(partnership.body.hint, /^This is a partnership's id \(prt_…\)/);
  });

  it('numbers orders per business, uniquely under 20 concurrent creations', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const results = await Promise.all(Array.from({ length: 20 }, () => postOrder(ctx(), t, f)));
    assert.deepEqual(
      results.map((r) => r.status),
      Array(20).fill(201),
    );
    const refs = results.map((r) => r.body.internalReference).sort();
    assert.deepEqual(
      refs,
      Array.from({ length: 20 }, (_, i) => `SO-${String(i + 1).padStart(6, '0')}`),
    );
    const other = await ctx().createTenant();
    assert.equal((await createOrder(ctx(), other, await createFixture(ctx(), other))).internalReference, 'SO-000001');
  });

  it('gives each of 12 concurrent creates its SO number in its answer, its event, its replay and its row, never a placeholder', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const keys = Array.from({ length: 12 }, (_, i) => `numbered-${i}`);
    const first = await Promise.all(
      keys.map((key, i) =>
        postOrder(
          ctx(),
          t,
          f,
          { properties: { n: i, text: 'SO-000001 "quoted" \\ ünïcode' } },
          { 'idempotency-key': key },
        ),
      ),
    );
    assert.deepEqual(
      first.map((r) => r.status),
      Array(12).fill(201),
    );
    assert.deepEqual(
      first.map((r) => r.body.internalReference).sort(),
      Array.from({ length: 12 }, (_, i) => `SO-${String(i + 1).padStart(6, '0')}`),
    );
    const events = (await ctx().request('GET', '/api/v1/events?types=order.created&limit=100', { as: t })).body.items;
    for (const [i, res] of first.entries()) {
      assert.deepEqual((await getOrder(ctx(), t, res.body.id)).body, res.body);
      assert.deepEqual(events.find((e: { resourceId: string }) => e.resourceId === res.body.id).data.object, res.body);
      const replay = await postOrder(
        ctx(),
        t,
        f,
        { properties: { n: i, text: 'SO-000001 "quoted" \\ ünïcode' } },
        { 'idempotency-key': keys[i] },
      );
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.deepEqual(replay.body, res.body);
    }
    const stored = await ctx()
      .db.selectFrom('idempotency_keys')
      .select('response_body')
      .where('business_id', '=', t.businessId)
      .execute();
    assert.equal(stored.length, 12);
    assert.ok(
      stored.every((r) => !r.response_body.includes('pending_')),
      'a stored replay holds a placeholder',
    );
  });

  it('numbers past SO-999999 with more digits, and a failed create gives its number back', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await ctx()
      .db.insertInto('business_counters')
      .values({ business_id: t.businessId, name: 'order', value: 999_998 })
      .execute();
    assert.equal((await createOrder(ctx(), t, f)).internalReference, 'SO-999999');
    // A variant that is not on the buyer's list: refused inside the write, which is undone with the number it took.
    const refused = await postOrder(ctx(), t, f, { orderItems: [{ itemVariantId: 'var_unknown', quantity: 1 }] });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const next = await createOrder(ctx(), t, f);
    assert.equal(next.internalReference, 'SO-1000000');
    assert.equal((await getOrder(ctx(), t, next.id)).body.internalReference, 'SO-1000000');
  });

  it('never gives a number a sent internalReference already has in the same form; other references leave the count alone', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    assert.equal((await createOrder(ctx(), t, f)).internalReference, 'SO-000001');
    const sent = await postOrder(ctx(), t, f, { internalReference: 'SO-000003' });
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    assert.equal((await createOrder(ctx(), t, f)).internalReference, 'SO-000004');
    // Below the count, in another form, past the counter's range, or someone else's: sent as they are, nothing skipped.
    for (const internalReference of ['SO-000002', 'SO-7', 'so-000009', 'SO-0000009', 'SO-9999999999', 'PO-000050']) {
      const other = await postOrder(ctx(), t, f, { internalReference });
      assert.equal(other.status, 201, JSON.stringify(other.body));
      assert.equal(other.body.internalReference, internalReference);
    }
    assert.equal((await createOrder(ctx(), t, f)).internalReference, 'SO-000005');
  });

  it('is idempotent with an Idempotency-Key: one order, the same answer replayed', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const first = await postOrder(ctx(), t, f, {}, { 'idempotency-key': 'create-order-1' });
    const again = await postOrder(ctx(), t, f, {}, { 'idempotency-key': 'create-order-1' });
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers.etag, '"1"');
    assert.deepEqual(again.body, first.body);
    const list = await ctx().request('GET', '/api/v1/orders', { as: t });
    assert.equal(list.body.total, 1);
  });
});
