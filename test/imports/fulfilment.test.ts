import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { getOrder } from '../helpers/orders.ts';
import { acknowledge, orderOfThree, ship, sscc } from '../fulfilment/helpers.ts';

const file = (lines: unknown[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;

/** Sends the lines as an import and answers its results by line once it has finished. */
async function imported(c: TestContext, as: Tenant, lines: unknown[], query = '') {
  const posted = await c.request('POST', `/api/v1/imports${query}`, {
    as,
    body: file(lines),
    headers: { 'content-type': 'application/x-ndjson' },
  });
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  for (let i = 0; i < 1200; i++) {
    const imp = (await c.request('GET', `/api/v1/imports/${posted.body.id}`, { as })).body;
    if (imp.state === 'COMPLETED' || imp.state === 'STOPPED') {
      const text = (await c.request('GET', `/api/v1/imports/${imp.id}/results`, { as })).body;
      const results = (typeof text === 'string' ? text : `${JSON.stringify(text)}\n`)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      return { imp, byLine: new Map(results.map((r) => [r.line, r])) };
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`import ${posted.body.id} did not finish within 30 s`);
}

/**
 * Acknowledgement and shipment lines (issue 64): a supplier loads its open shipments from a file.
 * Each line is the single call (POST /orders/{id}/acknowledgements, POST /orders/{id}/shipments,
 * PATCH /shipments/{id}) with the order named by `orderId`; a line that would over-ship fails alone
 * with the single call's 409.
 */
describeEachBackend('bulk import of acknowledgements and shipments', (ctx) => {
  it('acknowledges, ships, patches and upserts shipments, each line as its single call would', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const other = await ctx().createTenant('Other');
    const foreign = await orderOfThree(ctx(), other);
    const asn = (n: string) => ({ asn: n });
    const { imp, byLine } = await imported(ctx(), t, [
      {
        op: 'create',
        resource: 'acknowledgement',
        ref: 'ack',
        orderId: order.id,
        data: { lines: [{ orderItemId: lines.c, decision: 'REJECTED', reasonCode: 'OUT_OF_STOCK' }] },
      },
      {
        op: 'create',
        resource: 'shipment',
        ref: 'first',
        orderId: order.id,
        data: {
          carrier: { name: 'UPS', scac: 'UPSN' },
          trackingNumbers: ['1Z999AA10123456784'],
          properties: asn('ASN-1'),
          packages: [{ sscc: sscc(1), lines: [{ orderItemId: lines.a, quantity: 30 }] }],
        },
      },
      // Over-ships line 1 (20 left): fails alone, with the single call's 409.
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        data: { lines: [{ orderItemId: lines.a, quantity: 21 }] },
      },
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        data: { lines: [{ orderItemId: lines.c, quantity: 1 }] },
      },
      { op: 'create', resource: 'shipment', data: { lines: [{ orderItemId: lines.a, quantity: 1 }] } },
      {
        op: 'create',
        resource: 'shipment',
        orderId: foreign.order.id,
        data: { lines: [{ orderItemId: foreign.lines.a, quantity: 1 }] },
      },
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        data: { packages: [{ sscc: '123456789012345678', lines: [{ orderItemId: lines.a, quantity: 0 }] }] },
      },
      { op: 'patch', resource: 'shipment', id: { $ref: 'first' }, data: { service: 'Ground' } },
      // The same ASN again: found by its property and patched, not shipped twice.
      {
        op: 'upsert',
        resource: 'shipment',
        orderId: order.id,
        match: 'properties.asn',
        data: { properties: asn('ASN-1'), lines: [{ orderItemId: lines.a, quantity: 30 }] },
        patch: { trackingNumbers: ['1Z999AA10123456784', '1Z999AA10123456785'] },
      },
      {
        op: 'upsert',
        resource: 'shipment',
        ref: 'second',
        orderId: { $ref: 'ack' },
        match: 'properties.asn',
        data: { properties: asn('ASN-2'), lines: [{ orderItemId: lines.a, quantity: 20 }] },
      },
      {
        op: 'upsert',
        resource: 'shipment',
        orderId: order.id,
        match: 'properties.asn',
        data: {
          properties: asn('ASN-3'),
          lines: [
            { orderItemId: lines.a, quantity: 20 },
            { orderItemId: lines.b, quantity: 10 },
          ],
        },
      },
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        data: { properties: asn('ASN-3'), lines: [{ orderItemId: lines.b, quantity: 10 }] },
      },
      { op: 'create', resource: 'item', orderId: order.id, data: { item: { name: 'x' } } },
      { op: 'patch', resource: 'acknowledgement', id: 'ack_x', data: {} },
      // A create makes its own id: one sent with it is refused, not ignored.
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        id: 'shp_forced',
        data: { lines: [{ orderItemId: lines.a, quantity: 1 }] },
      },
    ]);
    assert.equal(imp.state, 'COMPLETED');
    assert.deepEqual(imp.counts, { created: 3, updated: 2, unchanged: 0, failed: 10 });

    const ack = byLine.get(1);
    assert.equal(ack.outcome, 'created');
    assert.match(ack.id, /^ack_/);
    const acks = await ctx().request('GET', `/api/v1/orders/${order.id}/acknowledgements`, { as: t });
    assert.equal(acks.body.items[0].id, ack.id);
    assert.equal(acks.body.items[0].decision, 'ACCEPTED_WITH_CHANGES');

    assert.equal(byLine.get(2).outcome, 'created');
    const single = await ship(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 41 }] });
    assert.equal(single.status, 409);
    assert.equal(byLine.get(3).error.errorCode, 'CONFLICT');
    assert.match(byLine.get(3).error.message, /Line 1 \(oi_\w+\) has 20 left to ship \(50 may ship, 30 already/);
    assert.match(byLine.get(4).error.message, /Line 3 .* has 0 left/);
    assert.equal(byLine.get(5).error.fieldErrors.orderId, 'Required: the order the shipment is of');
    assert.equal(byLine.get(6).error.errorCode, 'NOT_FOUND', "another business's order is not found");
    assert.equal(byLine.get(6).error.message, 'Order not found');
    const badSscc = byLine.get(7).error;
    assert.equal(badSscc.errorCode, 'VALIDATION_ERROR');
    assert.ok(badSscc.fieldErrors['packages.0.lines.0.quantity'] || badSscc.fieldErrors['packages.0.sscc']);
    assert.equal(byLine.get(8).outcome, 'updated');
    assert.equal(byLine.get(8).id, byLine.get(2).id);
    assert.equal(byLine.get(9).outcome, 'updated', 'the upsert found the shipment by its ASN');
    assert.equal(byLine.get(9).id, byLine.get(2).id);
    // orderId names the acknowledgement's line by ref: not an order.
    assert.equal(byLine.get(10).error.errorCode, 'NOT_FOUND');
    assert.equal(byLine.get(11).outcome, 'created');
    assert.equal(byLine.get(12).error.errorCode, 'CONFLICT', 'line 2 has nothing left after ASN-3');
    assert.match(byLine.get(13).error.fieldErrors.orderId, /Only an acknowledgement or shipment line/);
    assert.equal(byLine.get(14).error.fieldErrors.op, 'An acknowledgement line takes op create');
    assert.equal(byLine.get(15).error.fieldErrors.id, 'Only a patch line takes id: a create makes its own');

    const first = (await ctx().request('GET', `/api/v1/shipments/${byLine.get(2).id}`, { as: t })).body;
    assert.equal(first.service, 'Ground');
    assert.deepEqual(first.trackingNumbers, ['1Z999AA10123456784', '1Z999AA10123456785']);
    assert.deepEqual(first.lines, [{ orderItemId: lines.a, quantity: 30 }]);
    const listed = await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t });
    assert.equal(listed.body.items.length, 2);
    const shipped = (await getOrder(ctx(), t, order.id)).body;
    assert.equal(shipped.status, 'IN_TRANSIT', 'every line not rejected has shipped');
    assert.equal(shipped.acknowledgement.id, ack.id);

    const events = await ctx().request('GET', `/api/v1/events?resourceType=shipment&limit=100`, { as: t });
    const created = events.body.items.filter((e: any) => e.type === 'shipment.created');
    assert.equal(created.length, 2);
    assert.ok(created.every((e: any) => e.requestId === imp.id));
    assert.equal((await acknowledge(ctx(), other, order.id, {})).status, 404);
  });

  it("matches an upserted shipment among its own order's shipments only, not another order's with the same ASN", async () => {
    const t = await ctx().createTenant();
    const one = await orderOfThree(ctx(), t);
    const two = await orderOfThree(ctx(), t);
    const first = await ship(ctx(), t, one.order.id, {
      properties: { asn: 'ASN-9' },
      lines: [{ orderItemId: one.lines.a, quantity: 5 }],
    });
    assert.equal(first.status, 201);
    const { byLine } = await imported(ctx(), t, [
      {
        op: 'upsert',
        resource: 'shipment',
        orderId: two.order.id,
        match: 'properties.asn',
        data: { properties: { asn: 'ASN-9' }, lines: [{ orderItemId: two.lines.a, quantity: 1 }] },
      },
    ]);
    assert.equal(byLine.get(1).outcome, 'created', JSON.stringify(byLine.get(1)));
    assert.notEqual(byLine.get(1).id, first.body.id);
    const shipped = await ctx().request('GET', `/api/v1/orders/${two.order.id}/shipments`, { as: t });
    assert.deepEqual(
      shipped.body.items.map((s: any) => s.lines),
      [[{ orderItemId: two.lines.a, quantity: 1 }]],
    );
  });

  it('checks the lines in a dry run and writes nothing, and needs fulfilment:write', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const body = [
      { op: 'create', resource: 'acknowledgement', orderId: order.id, data: {} },
      {
        op: 'create',
        resource: 'shipment',
        orderId: order.id,
        data: { lines: [{ orderItemId: lines.a, quantity: 1 }] },
      },
    ];
    const dry = await imported(ctx(), t, body, '?dryRun=true');
    assert.deepEqual(dry.imp.counts, { created: 2, updated: 0, unchanged: 0, failed: 0 });
    // The shipment was checked against the order as it is, without line 1's acknowledgement: it says so.
    assert.equal(dry.byLine.get(1).note, undefined);
    assert.equal(dry.byLine.get(2).note, 'Checked without what line 1 would have made: a dry run makes nothing');
    assert.equal((await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t })).body.items.length, 0);
    assert.equal((await getOrder(ctx(), t, order.id)).body.acknowledgement, null);

    const warehouse = await ctx().addKey(t, ['imports:write', 'fulfilment:write']);
    const ordersOnly = await ctx().addKey(t, ['imports:write', 'orders:write']);
    const denied = await imported(ctx(), ordersOnly, body);
    assert.equal(denied.byLine.get(1).error.message, 'This API key lacks the scope fulfilment:write');
    assert.equal(denied.byLine.get(2).error.message, 'This API key lacks the scope fulfilment:write');
    const allowed = await imported(ctx(), warehouse, body);
    assert.deepEqual(allowed.imp.counts, { created: 2, updated: 0, unchanged: 0, failed: 0 });
    assert.equal((await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t })).body.items.length, 1);
  });
});
