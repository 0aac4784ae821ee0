import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';
import { createFixture, createOrder, getOrder, patchOrder } from '../helpers/orders.ts';
import { acknowledge, orderOfThree, shipOk } from './helpers.ts';

describeEachBackend('POST /api/v1/orders/:id/acknowledgements', (ctx) => {
  securityCases(ctx, {
    method: 'POST',
    url: async (c, owner) =>
      `/api/v1/orders/${(await createOrder(c, owner, await createFixture(c, owner))).id}/acknowledgements`,
    body: {},
  });

  it('accepts lines not named as ordered, derives the header, sets the phase, and the order shows it at once', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const before = await getOrder(ctx(), t, order.id);
    assert.equal(before.body.acknowledgement, null);
    const res = await acknowledge(ctx(), t, order.id, {
      phase: 'ACTIVE',
      lines: [
        { orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: 40, reason: 'Short stock', reasonCode: 'SS' },
        { orderItemId: lines.c, decision: 'REJECTED' },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.decision, 'ACCEPTED_WITH_CHANGES');
    assert.deepEqual(
      res.body.lines.map((l: any) => [l.lineNumber, l.decision, l.orderedQuantity, l.quantity]),
      [
        [1, 'QUANTITY_CHANGED', 50, 40],
        [2, 'ACCEPTED', 10, 10],
        [3, 'REJECTED', 4, 0],
      ],
    );
    const after = await getOrder(ctx(), t, order.id);
    assert.deepEqual(after.body.acknowledgement, {
      id: res.body.id,
      decidedAt: res.body.decidedAt,
      summary: 'ACCEPTED_WITH_CHANGES',
    });
    assert.equal(after.body.phase, 'ACTIVE');
    assert.equal(after.body.version, before.body.version + 1);
    assert.equal(after.headers.etag, `"${before.body.version + 1}"`);
    const events = await ctx().request('GET', `/api/v1/orders/${order.id}/events`, { as: t });
    const last = events.body.items.at(-1);
    assert.equal(last.type, 'order.acknowledged');
    assert.deepEqual(last.data.object, after.body);
    assert.deepEqual(last.data.changes.phase, { from: 'PENDING', to: 'ACTIVE' });

    const all = await acknowledge(ctx(), t, order.id, {});
    assert.equal(all.body.decision, 'ACCEPTED');
    const list = await ctx().request('GET', `/api/v1/orders/${order.id}/acknowledgements`, { as: t });
    assert.deepEqual(
      list.body.items.map((a: any) => a.id),
      [all.body.id, res.body.id],
    );
    assert.equal((await getOrder(ctx(), t, order.id)).body.acknowledgement.summary, 'ACCEPTED');
    const rejected = await acknowledge(ctx(), t, order.id, {
      phase: 'REJECTED',
      lines: [lines.a, lines.b, lines.c].map((id) => ({ orderItemId: id, decision: 'REJECTED' })),
    });
    assert.equal(rejected.body.decision, 'REJECTED');
    assert.equal((await getOrder(ctx(), t, order.id)).body.phase, 'REJECTED');
  });

  it('refuses unknown, foreign and repeated lines, bad quantities and missing details with 400s', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const foreign = await orderOfThree(ctx(), other);
    const cases: Array<[unknown, string]> = [
      [{ orderItemId: 'oi_nope', decision: 'ACCEPTED' }, 'lines.0.orderItemId'],
      [{ orderItemId: foreign.lines.a, decision: 'ACCEPTED' }, 'lines.0.orderItemId'],
      [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED' }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: 51 }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: 0 }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: -1 }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: 2.5 }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'ACCEPTED', quantity: 3 }, 'lines.0.quantity'],
      [{ orderItemId: lines.a, decision: 'PRICE_CHANGED' }, 'lines.0.price'],
      [{ orderItemId: lines.a, decision: 'RESCHEDULED' }, 'lines.0.expectedAt'],
      [
        { orderItemId: lines.a, decision: 'SUBSTITUTED', substituteVariantId: foreign.f.variantIds[0] },
        'lines.0.substituteVariantId',
      ],
      [{ orderItemId: lines.a, decision: 'MAYBE' }, 'lines.0.decision'],
    ];
    for (const [line, field] of cases) {
      const res = await acknowledge(ctx(), t, order.id, { lines: [line] });
      assert.equal(res.status, 400, JSON.stringify(line));
      assert.ok(res.body.fieldErrors?.[field], `${JSON.stringify(line)}: ${JSON.stringify(res.body)}`);
    }
    const twice = await acknowledge(ctx(), t, order.id, {
      lines: [
        { orderItemId: lines.a, decision: 'ACCEPTED' },
        { orderItemId: lines.a, decision: 'REJECTED' },
      ],
    });
    assert.equal(twice.status, 400);
    assert.ok(twice.body.fieldErrors['lines.1.orderItemId']);
    assert.equal((await getOrder(ctx(), t, order.id)).body.acknowledgement, null);
    const ok = await acknowledge(ctx(), t, order.id, {
      lines: [
        {
          orderItemId: lines.a,
          decision: 'SUBSTITUTED',
          substituteVariantId: order.orderItems[1].itemListEntry.itemVariantId,
        },
        { orderItemId: lines.b, decision: 'PRICE_CHANGED', price: 2.75 },
        { orderItemId: lines.c, decision: 'RESCHEDULED', expectedAt: '2030-02-01T00:00:00Z' },
      ],
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.lines[1].price, '2.75');
    assert.equal(ok.body.lines[2].expectedAt, '2030-02-01T00:00:00.000Z');
  });

  it('refuses (409) to accept less of a line than its shipments hold, and a deleted order is a 404', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 30 }] });
    const res = await acknowledge(ctx(), t, order.id, {
      lines: [{ orderItemId: lines.a, decision: 'QUANTITY_CHANGED', quantity: 20 }],
    });
    assert.equal(res.status, 409);
    assert.match(res.body.message, /Line 1 .* has 30 in shipments/);
    assert.equal((await patchOrder(ctx(), t, order.id, { order: { notes: 'x' } })).status, 200);
    await ctx().request('DELETE', `/api/v1/orders/${order.id}`, { as: t });
    assert.equal((await acknowledge(ctx(), t, order.id, {})).status, 404);
  });
});

describeEachBackend('GET /api/v1/orders/:id/acknowledgements', (ctx) => {
  securityCases(ctx, {
    method: 'GET',
    url: async (c, owner) =>
      `/api/v1/orders/${(await createOrder(c, owner, await createFixture(c, owner))).id}/acknowledgements`,
  });
});
