import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { createFixture, createOrder, getOrder, patchOrder, postOrder } from '../helpers/orders.ts';

/**
 * A create and a PATCH answer the order as stored, and its event carries the same: byte for byte, key order
 * included, as a later GET reads it. PostgreSQL's jsonb keeps keys by length and then bytes, not
 * as sent; JSON.parse puts integer-like keys first. The write reads its rows back, so it comes
 * to the same text.
 */
const KEYS = {
  zebra: 1,
  a: { bb: 1, a: 2, 10: 3, 2: 4, '-1': 5, '01': 6 },
  é: 1,
  e: 2,
  东京: 2,
  ab: [3, { z: 1, y: 2 }],
  Z: null,
  big: 9007199254740991,
  huge: 1.5e300,
  small: 1.5e-7,
  exp: 1e21,
  neg: -0,
  t: true,
  s: 'x\u00e9\u{1F69A}',
  '': 'empty',
  ' ': 'space',
};

describeEachBackend('order writes answer the order as stored', (ctx) => {
  it('a create: the answer, a later GET and the event are the same text', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (const internalReference of [undefined, 'REF-1']) {
      const created = await postOrder(ctx(), t, f, {
        internalReference,
        notes: 'n',
        expectedDeliveryAt: '2031-02-03T04:05:06+02:00',
        properties: KEYS,
        orderItems: [
          { itemVariantId: f.variantIds[1], quantity: 2.5, price: 3.1, properties: KEYS },
          { itemVariantId: f.variantIds[0], quantity: 1, lineNumber: 1 },
        ],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(created.body.internalReference, internalReference === undefined ? /^SO-\d{6}$/ : /^REF-1$/);
      const read = await getOrder(ctx(), t, created.body.id);
      assert.equal(JSON.stringify(created.body), JSON.stringify(read.body));
      const events = await ctx().request('GET', `/api/v1/orders/${created.body.id}/events`, { as: t });
      assert.deepEqual(
        events.body.items.map((e: any) => e.type),
        ['order.created'],
      );
      assert.equal(JSON.stringify(events.body.items[0].data.object), JSON.stringify(read.body));
    }
  });

  it('a PATCH: the answer, a later GET and the event are the same text, for properties and items of every kind', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f, {
      orderItems: [
        { itemVariantId: f.variantIds[0], quantity: 1 },
        { itemVariantId: f.variantIds[1], quantity: 2 },
      ],
      properties: { keep: { y: 1, x: 2 }, a: { old: true } },
    });
    const [first, second] = order.orderItems;
    const bodies = [
      {
        order: { notes: 'n', expectedDeliveryAt: '2031-02-03T04:05:06+02:00', shippedAt: null, properties: KEYS },
        createOrderItems: [
          {
            itemListEntryId: f.entryIds[2],
            quantity: 2.5,
            unitOfMeasure: 'EA',
            currency: 'AUD',
            price: 3.1,
            cost: 0.5,
            properties: KEYS,
          },
        ],
        updateOrderItems: [
          { id: first.id, quantity: 4, price: 2, properties: { ...KEYS, zz: { b: 1, a: 1 } } },
          { id: first.id, cost: 1.25 },
        ],
        deleteOrderItems: [second.id],
      },
      // Fields only: the items stay as stored; totalAmount given.
      { order: { status: 'PACKED', totalAmount: 10.1, properties: { a: { 3: 'three' }, new: { b: 2, a: 1 } } } },
      // Items only: the total is computed again.
      { updateOrderItems: [{ id: first.id, quantity: 1, lineNumber: 9 }] },
    ];
    for (const body of bodies) {
      const patched = await patchOrder(ctx(), t, order.id, body);
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const read = await getOrder(ctx(), t, order.id);
      assert.equal(JSON.stringify(patched.body), JSON.stringify(read.body));
      const events = await ctx().request('GET', `/api/v1/orders/${order.id}/events`, { as: t });
      const event = events.body.items.at(-1);
      assert.equal(event.type, 'order.updated');
      assert.equal(JSON.stringify(event.data.object), JSON.stringify(read.body));
    }
  });
});
