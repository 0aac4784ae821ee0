import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { orderOfThree, shipOk } from './helpers.ts';

describeEachBackend('POST /api/v1/invoices with a shipmentId', (ctx) => {
  it("bills each shipment's quantities at the order's prices, once per shipment, never beside a whole-order invoice", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const second = await orderOfThree(ctx(), t);
    const first = await shipOk(ctx(), t, order.id, {
      packages: [
        { lines: [{ orderItemId: lines.a, quantity: 20 }] },
        {
          lines: [
            { orderItemId: lines.a, quantity: 5 },
            { orderItemId: lines.c, quantity: 4 },
          ],
        },
      ],
    });
    const next = await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.b, quantity: 10 }] });
    const invoice = (body: unknown) => ctx().request('POST', '/api/v1/invoices', { as: t, body });

    const one = await invoice({ orderId: order.id, shipmentId: first.id });
    assert.equal(one.status, 201, JSON.stringify(one.body));
    assert.equal(one.body.shipmentId, first.id);
    assert.deepEqual(
      one.body.invoiceLineItems.map((l: any) => [l.orderItemId, l.quantity, l.unitAmount, l.lineAmount]),
      [
        [lines.a, 25, '10.00', '250.00'],
        [lines.c, 4, '0.10', '0.40'],
      ],
    );
    assert.equal(one.body.totalAmount, '250.40');
    const two = await invoice({ orderId: order.id, shipmentId: next.id });
    assert.equal(two.status, 201);
    assert.equal(two.body.totalAmount, '25.00');

    // Each 409 names what is billed already.
    const again = await invoice({ orderId: order.id, shipmentId: first.id });
    assert.equal(again.status, 409);
    assert.equal(
      again.body.message,
      `The shipment already has a live invoice (${one.body.invoiceNumber}); void it before invoicing the shipment again`,
    );
    const wholeBeside = await invoice({ orderId: order.id });
    assert.equal(wholeBeside.status, 409);
    assert.match(
      wholeBeside.body.message,
      /^The order already has a live invoice of one of its shipments \(INV-\d+\): an invoice of the whole order would bill it again; void it first$/,
    );
    const wrongOrder = await invoice({ orderId: second.order.id, shipmentId: first.id });
    assert.equal(wrongOrder.status, 400);
    assert.ok(wrongOrder.body.fieldErrors.shipmentId);
    const foreign = await ctx().request('POST', '/api/v1/invoices', {
      as: other,
      body: { orderId: order.id, shipmentId: first.id },
    });
    assert.equal(foreign.status, 404);

    const status = (id: string, to: string) =>
      ctx().request('PATCH', `/api/v1/invoices/${id}`, { as: t, body: { status: to } });
    // Reviving a voided invoice beside the other shipment's live invoice is allowed; beside a whole-order one it is not.
    assert.equal((await status(two.body.id, 'VOIDED')).status, 200);
    assert.equal((await status(two.body.id, 'DRAFT')).status, 200);

    await status(one.body.id, 'VOIDED');
    await ctx().request('DELETE', `/api/v1/shipments/${first.id}`, { as: t });
    const voided = await invoice({ orderId: order.id, shipmentId: first.id });
    assert.equal(voided.status, 409);
    assert.match(voided.body.message, /voided/);
    // Nor is the voided shipment billed again by reviving its voided invoice.
    const revived = await status(one.body.id, 'AUTHORISED');
    assert.equal(revived.status, 409);
    assert.equal(revived.body.message, 'The shipment is voided: its invoice stays VOIDED');
    assert.equal((await ctx().request('GET', `/api/v1/invoices/${one.body.id}`, { as: t })).body.status, 'VOIDED');

    const whole = await invoice({ orderId: second.order.id });
    assert.equal(whole.status, 201);
    assert.equal(whole.body.shipmentId, null);
    const s = await shipOk(ctx(), t, second.order.id, { lines: [{ orderItemId: second.lines.a, quantity: 1 }] });
    const beside = await invoice({ orderId: second.order.id, shipmentId: s.id });
    assert.equal(beside.status, 409);
    assert.equal(
      beside.body.message,
      `The order already has a live invoice of the whole order (${whole.body.invoiceNumber}), which bills its shipments; void it first`,
    );
  });
});
