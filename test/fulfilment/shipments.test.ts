import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';
import { acknowledge, orderOfThree, ship, shipOk, sscc } from './helpers.ts';
import { createQueryCounter } from '../helpers/queries.ts';

async function shipmentOf(c: TestContext, owner: Tenant): Promise<string> {
  const order = await createOrder(c, owner, await createFixture(c, owner));
  return (await shipOk(c, owner, order.id, { lines: [{ orderItemId: order.orderItems[0].id, quantity: 1 }] })).id;
}
const orderOf = async (c: TestContext, owner: Tenant): Promise<string> =>
  (await createOrder(c, owner, await createFixture(c, owner))).id;

describeEachBackend('Shipments: security', (ctx) => {
  securityCases(ctx, {
    method: 'POST',
    url: async (c, o) => `/api/v1/orders/${await orderOf(c, o)}/shipments`,
    body: { lines: [{ orderItemId: 'oi_x', quantity: 1 }] },
  });
  securityCases(ctx, { method: 'GET', url: async (c, o) => `/api/v1/orders/${await orderOf(c, o)}/shipments` });
  securityCases(ctx, { method: 'GET', url: async (c, o) => `/api/v1/shipments/${await shipmentOf(c, o)}` });
  securityCases(ctx, {
    method: 'PATCH',
    url: async (c, o) => `/api/v1/shipments/${await shipmentOf(c, o)}`,
    body: { service: 'Ground' },
  });
  securityCases(ctx, { method: 'DELETE', url: async (c, o) => `/api/v1/shipments/${await shipmentOf(c, o)}` });
  securityCases(ctx, { method: 'GET', url: async (c, o) => `/api/v1/shipments/${await shipmentOf(c, o)}/events` });
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/shipments', crossTenant: false });
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/shipments/export', crossTenant: false });
});

describeEachBackend('POST /api/v1/orders/:id/shipments', (ctx) => {
  it('records packages with SSCCs, adds their lines up, and the order follows: IN_TRANSIT when all shipped, DELIVERED when all delivered', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    await acknowledge(ctx(), t, order.id, { lines: [{ orderItemId: lines.c, decision: 'REJECTED' }] });
    const first = await shipOk(ctx(), t, order.id, {
      shippedAt: '2030-01-10T08:00:00Z',
      carrier: { name: 'UPS', scac: 'UPSN' },
      trackingNumbers: ['1Z999AA10123456784'],
      packages: [
        {
          sscc: sscc(1),
          weight: { value: 12.5, unit: 'kg' },
          dimensions: { length: 40, width: 30, height: 20, unit: 'cm' },
          lines: [
            { orderItemId: lines.a, quantity: 20 },
            { orderItemId: lines.b, quantity: 10 },
          ],
        },
        { sscc: sscc(2), lines: [{ orderItemId: lines.a, quantity: 10 }] },
      ],
    });
    assert.equal(first.status, 'IN_TRANSIT');
    assert.deepEqual(first.lines, [
      { orderItemId: lines.a, quantity: 30 },
      { orderItemId: lines.b, quantity: 10 },
    ]);
    assert.equal(first.packages[0].sscc, sscc(1));
    assert.deepEqual(first.carrier, { name: 'UPS', scac: 'UPSN' });
    const got = await ctx().request('GET', `/api/v1/shipments/${first.id}`, { as: t });
    assert.deepEqual(got.body, first);
    assert.equal(got.headers.etag, '"1"');
    assert.equal((await getOrder(ctx(), t, order.id)).body.status, 'UNASSIGNED');

    const over = await ship(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 21 }] });
    assert.equal(over.status, 409);
    assert.match(over.body.message, /Line 1 \(oi_\w+\) has 20 left to ship \(50 may ship, 30 already in shipments\)/);
    const rejected = await ship(ctx(), t, order.id, { lines: [{ orderItemId: lines.c, quantity: 1 }] });
    assert.equal(rejected.status, 409);
    assert.match(rejected.body.message, /Line 3 .* has 0 left/);

    const second = await shipOk(ctx(), t, order.id, {
      shippedAt: '2030-01-11T08:00:00Z',
      lines: [{ orderItemId: lines.a, quantity: 20 }],
    });
    const shipped = (await getOrder(ctx(), t, order.id)).body;
    assert.equal(shipped.status, 'IN_TRANSIT');
    assert.equal(shipped.shippedAt, '2030-01-11T08:00:00.000Z');

    await ctx().request('PATCH', `/api/v1/shipments/${first.id}`, { as: t, body: { status: 'DELIVERED' } });
    assert.equal((await getOrder(ctx(), t, order.id)).body.status, 'IN_TRANSIT');
    const done = await ctx().request('PATCH', `/api/v1/shipments/${second.id}`, {
      as: t,
      body: { status: 'DELIVERED', deliveredAt: '2030-01-12T09:00:00Z' },
    });
    assert.equal(done.status, 200);
    assert.equal(done.headers.etag, '"2"');
    const delivered = (await getOrder(ctx(), t, order.id)).body;
    assert.equal(delivered.status, 'DELIVERED');
    assert.equal(delivered.deliveredAt, '2030-01-12T09:00:00.000Z');

    const events = await ctx().request('GET', `/api/v1/events?types=shipment.*,order.*`, { as: t });
    const types = events.body.items.map((e: any) => e.type);
    assert.deepEqual(types.slice(-6), [
      'shipment.created',
      'shipment.created',
      'order.updated',
      'shipment.updated',
      'shipment.updated',
      'order.updated',
    ]);
    const history = await ctx().request('GET', `/api/v1/shipments/${second.id}/events`, { as: t });
    assert.deepEqual(history.body.items.at(-1).data.object, done.body);
  });

  it('refuses bad SSCCs, quantities of 0, negative, fractional or above the line, unknown, foreign and repeated lines', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const foreign = await orderOfThree(ctx(), other);
    const bad = sscc(3).slice(0, 17) + String((Number(sscc(3)[17]) + 1) % 10);
    const cases: Array<[unknown, string, number]> = [
      [{ packages: [{ sscc: bad, lines: [{ orderItemId: lines.a, quantity: 1 }] }] }, 'packages.0.sscc', 400],
      [{ packages: [{ sscc: '12345', lines: [{ orderItemId: lines.a, quantity: 1 }] }] }, 'packages.0.sscc', 400],
      [
        {
          packages: [
            { sscc: sscc(4), lines: [{ orderItemId: lines.a, quantity: 1 }] },
            { sscc: sscc(4), lines: [{ orderItemId: lines.b, quantity: 1 }] },
          ],
        },
        'packages.1.sscc',
        400,
      ],
      [{ lines: [{ orderItemId: lines.a, quantity: 0 }] }, 'lines.0.quantity', 400],
      [{ lines: [{ orderItemId: lines.a, quantity: -2 }] }, 'lines.0.quantity', 400],
      [{ lines: [{ orderItemId: lines.a, quantity: 1.5 }] }, 'lines.0.quantity', 400],
      [{ lines: [{ orderItemId: 'oi_unknown', quantity: 1 }] }, 'lines.0.orderItemId', 400],
      [{ lines: [{ orderItemId: foreign.lines.a, quantity: 1 }] }, 'lines.0.orderItemId', 400],
      [
        {
          lines: [
            { orderItemId: lines.a, quantity: 1 },
            { orderItemId: lines.a, quantity: 1 },
          ],
        },
        'lines.1.orderItemId',
        400,
      ],
      [{}, 'lines', 400],
      [
        {
          lines: [{ orderItemId: lines.a, quantity: 1 }],
          packages: [{ lines: [{ orderItemId: lines.a, quantity: 1 }] }],
        },
        'lines',
        400,
      ],
      [
        { carrier: { name: 'X', scac: 'toolong' }, lines: [{ orderItemId: lines.a, quantity: 1 }] },
        'carrier.scac',
        400,
      ],
    ];
    for (const [body, field, status] of cases) {
      const res = await ship(ctx(), t, order.id, body);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      assert.ok(res.body.fieldErrors?.[field], `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    }
    const above = await ship(ctx(), t, order.id, { lines: [{ orderItemId: lines.b, quantity: 11 }] });
    assert.equal(above.status, 409);
    assert.equal((await ctx().request('GET', '/api/v1/shipments', { as: t })).body.total, 0);
    assert.equal(
      (await ship(ctx(), t, foreign.order.id, { lines: [{ orderItemId: foreign.lines.a, quantity: 1 }] })).status,
      404,
    );
  });
});

describeEachBackend('PATCH and DELETE /api/v1/shipments/:id', (ctx) => {
  it('merges properties, checks If-Match, voids (freeing the quantity) and refuses to change a voided shipment', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const s = await shipOk(ctx(), t, order.id, {
      lines: [{ orderItemId: lines.b, quantity: 10 }],
      properties: { a: { b: 1 } },
    });
    const url = `/api/v1/shipments/${s.id}`;
    const patched = await ctx().request('PATCH', url, {
      as: t,
      body: { properties: { a: { c: 2 } }, trackingNumbers: ['T1'] },
    });
    assert.deepEqual(patched.body.properties, { a: { b: 1, c: 2 } });
    assert.deepEqual(patched.body.trackingNumbers, ['T1']);
    const stale = await ctx().request('PATCH', url, {
      as: t,
      body: { service: 'Air' },
      headers: { 'if-match': '"1"' },
    });
    assert.equal(stale.status, 412);
    const same = await ctx().request('PATCH', url, { as: t, body: { trackingNumbers: ['T1'] } });
    assert.equal(same.body.version, 2);
    assert.equal((await ship(ctx(), t, order.id, { lines: [{ orderItemId: lines.b, quantity: 1 }] })).status, 409);
    const voided = await ctx().request('DELETE', url, { as: t });
    assert.equal(voided.status, 200);
    assert.equal(voided.body.status, 'VOIDED');
    assert.ok(voided.body.voidedAt);
    const again = await ctx().request('DELETE', url, { as: t });
    assert.deepEqual(again.body, voided.body);
    assert.equal((await ctx().request('PATCH', url, { as: t, body: { service: 'Air' } })).status, 409);
    await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.b, quantity: 10 }] });
    const history = await ctx().request('GET', `${url}/events`, { as: t });
    assert.deepEqual(
      history.body.items.map((e: any) => [e.type, e.resourceVersion]),
      [
        ['shipment.created', 1],
        ['shipment.updated', 2],
        ['shipment.voided', 3],
      ],
    );
    assert.deepEqual(history.body.items[2].data.object, voided.body);
    assert.equal((await patchOrder(ctx(), t, order.id, { order: { status: 'RETURNED' } })).body.status, 'RETURNED');
  });
});

describeEachBackend("A shipment's times", (ctx) => {
  it('refuse a DELIVERED shipment without a delivery time, and a delivery before it shipped', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const s = await shipOk(ctx(), t, order.id, {
      shippedAt: '2030-01-10T08:00:00Z',
      lines: [{ orderItemId: lines.a, quantity: 1 }],
    });
    const patch = (body: unknown) => ctx().request('PATCH', `/api/v1/shipments/${s.id}`, { as: t, body });
    const nulled = await patch({ status: 'DELIVERED', deliveredAt: null });
    assert.equal(nulled.status, 400);
    assert.equal(
      nulled.body.fieldErrors.deliveredAt,
      'A DELIVERED shipment has a delivery time: leave deliveredAt out to take now',
    );
    const early = await patch({ status: 'DELIVERED', deliveredAt: '2030-01-09T08:00:00Z' });
    assert.equal(early.status, 400);
    assert.equal(
      early.body.fieldErrors.deliveredAt,
      "Must not be before the shipment's shippedAt (2030-01-10T08:00:00.000Z)",
    );
    const delivered = await patch({ status: 'DELIVERED', deliveredAt: '2030-01-12T08:00:00Z' });
    assert.equal(delivered.status, 200);
    assert.equal((await patch({ deliveredAt: null })).status, 400, 'nor taken from a DELIVERED one');
    assert.equal((await patch({ status: 'RETURNED', deliveredAt: null })).status, 200);
  });

  it('keeps the delivery time of a DELIVERED shipment sent DELIVERED again: the PATCH changes nothing', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const s = await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 1 }] });
    const patch = (body: unknown) => ctx().request('PATCH', `/api/v1/shipments/${s.id}`, { as: t, body });
    const delivered = await patch({ status: 'DELIVERED' });
    assert.equal(delivered.status, 200);
    const events = async () =>
      (await ctx().request('GET', `/api/v1/shipments/${s.id}/events`, { as: t })).body.items.length;
    const count = await events();
    // A retry, or an ASN file sent again: the same status, no delivery time.
    const again = await patch({ status: 'DELIVERED' });
    assert.equal(again.status, 200);
    assert.equal(again.body.deliveredAt, delivered.body.deliveredAt);
    assert.equal(again.body.version, delivered.body.version);
    assert.equal(again.body.updatedAt, delivered.body.updatedAt);
    assert.equal(again.headers.etag, delivered.headers.etag);
    assert.equal(await events(), count, 'no event for a change of nothing');
    // A delivery time sent is still taken.
    const corrected = await patch({ status: 'DELIVERED', deliveredAt: '2031-01-01T00:00:00Z' });
    assert.equal(corrected.body.deliveredAt, '2031-01-01T00:00:00.000Z');
  });
});

describeEachBackend('An order whose shipments came back', (ctx) => {
  it('is RETURNED when every shipment not voided is, DELIVERED when the others were delivered, never back IN_TRANSIT', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const one = await shipOk(ctx(), t, order.id, {
      lines: [
        { orderItemId: lines.a, quantity: 50 },
        { orderItemId: lines.b, quantity: 10 },
      ],
    });
    const two = await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.c, quantity: 4 }] });
    const set = (id: string, status: string) =>
      ctx().request('PATCH', `/api/v1/shipments/${id}`, { as: t, body: { status } });
    const orderStatus = async () => (await getOrder(ctx(), t, order.id)).body.status;
    await set(one.id, 'DELIVERED');
    await set(two.id, 'DELIVERED');
    assert.equal(await orderStatus(), 'DELIVERED');
    await set(two.id, 'RETURNED');
    assert.equal(await orderStatus(), 'DELIVERED', 'one delivered, one returned');
    await set(one.id, 'RETURNED');
    assert.equal(await orderStatus(), 'RETURNED');
    const again = await set(two.id, 'IN_TRANSIT');
    assert.equal(await orderStatus(), 'IN_TRANSIT', 'a shipment on its way again');
    // On its way is not delivered: neither the shipment nor its order keeps a delivery time.
    assert.equal(again.body.deliveredAt, null);
    assert.equal((await getOrder(ctx(), t, order.id)).body.deliveredAt, null);
    const dated = await ctx().request('PATCH', `/api/v1/shipments/${two.id}`, {
      as: t,
      body: { deliveredAt: '2031-01-01T00:00:00Z' },
    });
    assert.equal(dated.status, 400);
    assert.equal(
      dated.body.fieldErrors.deliveredAt,
      'A shipment IN_TRANSIT has no delivery time: send status DELIVERED with it',
    );
  });
});

describeEachBackend('PATCH /api/v1/orders/:id beside shipments', (ctx) => {
  it('refuses (409) to delete a line that shipments not voided hold, so its goods cannot ship twice; once voided, it may go', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const s = await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 50 }] });
    const deleted = await patchOrder(ctx(), t, order.id, { deleteOrderItems: [lines.a, lines.b] });
    assert.equal(deleted.status, 409);
    assert.equal(
      deleted.body.message,
      `Order item(s) held by shipments cannot be deleted: ${lines.a}; void those shipments first`,
    );
    const kept = await getOrder(ctx(), t, order.id);
    assert.deepEqual(
      kept.body.orderItems.map((i: any) => i.id),
      [lines.a, lines.b, lines.c],
    );
    assert.equal((await patchOrder(ctx(), t, order.id, { deleteOrderItems: [lines.b] })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/shipments/${s.id}`, { as: t })).status, 200);
    assert.equal((await patchOrder(ctx(), t, order.id, { deleteOrderItems: [lines.a] })).status, 200);
  });
});

describeEachBackend('GET /api/v1/shipments', (ctx) => {
  it('filters by order, status, createdSince, modifiedSince and properties, and walks cursor pages', async () => {
    const t = await ctx().createTenant();
    const one = await orderOfThree(ctx(), t);
    const two = await orderOfThree(ctx(), t);
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(
        await shipOk(ctx(), t, (i % 2 ? one : two).order.id, {
          lines: [{ orderItemId: (i % 2 ? one : two).lines.a, quantity: 1 }],
          properties: { n: i },
        }),
      );
    const list = (q: string) => ctx().request('GET', `/api/v1/shipments?${q}`, { as: t });
    assert.equal((await list('')).body.total, 5);
    assert.equal((await list(`orderId=${one.order.id}`)).body.total, 2);
    assert.equal((await list('propertyPath=n&propertyValue=3')).body.items[0].id, made[3].id);
    const patched = await ctx().request('PATCH', `/api/v1/shipments/${made[0].id}`, {
      as: t,
      body: { status: 'DELIVERED' },
    });
    assert.deepEqual(
      (await list(`modifiedSince=${encodeURIComponent(made[4].updatedAt)}`)).body.items.map((s: any) => s.id),
      [made[0].id],
    );
    assert.equal((await list('status=DELIVERED')).body.items[0].updatedAt, patched.body.updatedAt);
    assert.equal((await list(`createdSince=${encodeURIComponent(made[2].createdAt)}`)).body.total, 2);
    const seen: string[] = [];
    let page = await list('limit=2');
    for (;;) {
      seen.push(...page.body.items.map((s: any) => s.id));
      if (!page.body.nextCursor) break;
      page = await list(`limit=2&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    }
    assert.deepEqual(seen, made.map((s) => s.id).reverse());
    const perOrder = await ctx().request('GET', `/api/v1/orders/${two.order.id}/shipments`, { as: t });
    assert.equal(perOrder.body.total, 3);
    const exported = await ctx().request('GET', '/api/v1/shipments/export', { as: t });
    assert.equal(exported.status, 200);
    assert.equal(exported.body.trim().split('\n').length, 5);
  });
});

describeEachBackend("An order's acknowledgements and shipments", (ctx) => {
  it("read whether the order lives from its stamp, not its row (a deleted order's lists are 404)", async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    await acknowledge(ctx(), t, order.id, { lines: [{ orderItemId: lines.c, decision: 'REJECTED' }] });
    await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 1 }] });
    // The order's row read whole: a built `select *` of orders, or the shared reads' raw one.
    const readsOrderRow = (q: string) =>
      (q.includes('"name":"orders"') && q.includes('"SelectAllNode"')) || q.includes('select * from orders ');
    const counter = await createQueryCounter(ctx(), t);
    try {
      for (const list of ['acknowledgements', 'shipments']) {
        const { body, queries } = await counter.measure(`/api/v1/orders/${order.id}/${list}`);
        assert.ok(body.items.length > 0, list);
        assert.deepEqual(queries.filter(readsOrderRow), [], list);
      }
    } finally {
      await counter.close();
    }
    const deleted = await orderOf(ctx(), t);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${deleted}`, { as: t })).status, 204);
    for (const list of ['acknowledgements', 'shipments']) {
      const res = await ctx().request('GET', `/api/v1/orders/${deleted}/${list}`, { as: t });
      assert.deepEqual([res.status, res.body.error], [404, 'Order not found'], list);
    }
  });

  it("keeps a deleted order's shipments readable, as history, and refuses their changes with 409 saying why", async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const s = await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 1 }] });
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${order.id}`, { as: t })).status, 204);
    const url = `/api/v1/shipments/${s.id}`;
    assert.equal((await ctx().request('GET', url, { as: t })).status, 200);
    for (const [method, body] of [
      ['PATCH', { status: 'DELIVERED' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await ctx().request(method, url, { as: t, body });
      assert.deepEqual(
        [res.status, res.body.message],
        [409, "The shipment's order was deleted: its shipments no longer change"],
        method,
      );
    }
    assert.equal((await ctx().request('GET', url, { as: t })).body.version, s.version);
  });
});
