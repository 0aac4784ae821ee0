import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { Decimal } from 'decimal.js';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

const ORDERED = [5, 3, 2];
const WRITERS = 32;

type Op =
  | {
      kind: 'ack';
      decisions: Array<{ decision: 'ACCEPTED' | 'REJECTED' | 'QUANTITY_CHANGED' | 'BACKORDERED'; q: number }>;
    }
  | { kind: 'ship'; lines: Array<{ line: number; quantity: number }>; packaged: boolean }
  | { kind: 'void'; pick: number }
  | { kind: 'patch'; status: string };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('ack' as const),
    decisions: fc.tuple(
      ...ORDERED.map(() =>
        fc.record({
          decision: fc.constantFrom('ACCEPTED', 'REJECTED', 'QUANTITY_CHANGED', 'BACKORDERED') as fc.Arbitrary<
            'ACCEPTED' | 'REJECTED' | 'QUANTITY_CHANGED' | 'BACKORDERED'
          >,
          q: fc.nat(100),
        }),
      ),
    ),
  }),
  fc.record({
    kind: fc.constant('ship' as const),
    lines: fc.uniqueArray(fc.record({ line: fc.nat(ORDERED.length - 1), quantity: fc.integer({ min: 1, max: 3 }) }), {
      minLength: 1,
      maxLength: 3,
      selector: (l) => l.line,
    }),
    packaged: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('void' as const), pick: fc.nat(1000) }),
  fc.record({ kind: fc.constant('patch' as const), status: fc.constantFrom('ACCEPTED', 'PACKED', 'RETURNED') }),
);

function bodyOf(op: Op, items: string[]) {
  if (op.kind === 'ack')
    return {
      lines: op.decisions.map((d, i) => ({
        orderItemId: items[i],
        decision: d.decision === 'QUANTITY_CHANGED' && ORDERED[i] === 1 ? 'REJECTED' : d.decision,
        ...(d.decision === 'QUANTITY_CHANGED' && ORDERED[i] > 1 && { quantity: 1 + (d.q % (ORDERED[i] - 1)) }),
      })),
    };
  if (op.kind === 'ship') {
    const lines = op.lines.map((l) => ({ orderItemId: items[l.line], quantity: l.quantity }));
    return op.packaged ? { packages: lines.map((l) => ({ lines: [l] })) } : { lines };
  }
  return { order: { status: (op as { status: string }).status, properties: { touched: true } } };
}

async function runWriters(ctx: TestContext, t: Tenant, orderId: string, items: string[], ops: Op[]) {
  const shipments: string[] = [];
  let next = 0;
  const answers: Array<{ op: Op; status: number; body: any }> = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < ops.length) {
        const op = ops[next++];
        let res: { status: number; body: any };
        if (op.kind === 'ack')
          res = await ctx.request('POST', `/api/v1/orders/${orderId}/acknowledgements`, {
            as: t,
            body: bodyOf(op, items),
          });
        else if (op.kind === 'ship') {
          res = await ctx.request('POST', `/api/v1/orders/${orderId}/shipments`, { as: t, body: bodyOf(op, items) });
          if (res.status === 201) shipments.push(res.body.id);
        } else if (op.kind === 'void') {
          if (shipments.length === 0) continue;
          res = await ctx.request('DELETE', `/api/v1/shipments/${shipments[op.pick % shipments.length]}`, { as: t });
        } else res = await ctx.request('PATCH', `/api/v1/orders/${orderId}`, { as: t, body: bodyOf(op, items) });
        answers.push({ op, ...res });
      }
    }),
  );
  return answers;
}

/**
 * 32 writers at once on one order: acknowledgements, shipments, voids and order PATCHes. Replaying
 * the feed in order, no line ever holds more in shipments not voided than the acknowledgement then
 * current lets ship; every shipment's last event shows it as its GET does.
 */
describeEachBackend('Fulfilment under 32 concurrent writers', (ctx) => {
  it('never over-ships a line, and every shipment event matches its GET', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: WRITERS, maxLength: WRITERS * 2 }), async (ops) => {
        const t = await ctx().createTenant();
        const f = await createFixture(ctx(), t);
        const order = await createOrder(ctx(), t, f, {
          orderItems: ORDERED.map((quantity, i) => ({ itemVariantId: f.variantIds[i], quantity })),
        });
        const items: string[] = order.orderItems.map((i: { id: string }) => i.id);
        const answers = await runWriters(ctx(), t, order.id, items, ops);
        for (const a of answers) {
          const ok = a.status < 300 || (a.status === 409 && a.body.errorCode === 'CONFLICT' && a.op.kind !== 'patch');
          assert.ok(ok, `${JSON.stringify(a.op)} -> ${a.status} ${JSON.stringify(a.body)}`);
          if (a.status === 409) assert.match(a.body.message, /^Line \d \(oi_\w+\) has /);
        }

        const acks = (await ctx().request('GET', `/api/v1/orders/${order.id}/acknowledgements`, { as: t })).body.items;
        const ackById = new Map<string, any>(acks.map((a: any) => [a.id, a]));
        const events = (await ctx().request('GET', '/api/v1/events?after=0&limit=1000', { as: t })).body.items;
        const live = new Map<string, Array<{ orderItemId: string; quantity: number }>>();
        const lastEvent = new Map<string, any>();
        let accepted: Map<string, number> = new Map(items.map((id, i) => [id, ORDERED[i]]));
        for (const event of events) {
          if (event.type === 'order.acknowledged') {
            const ack = ackById.get(event.data.object.acknowledgement.id);
            accepted = new Map(ack.lines.map((l: any) => [l.orderItemId, l.quantity]));
          }
          if (event.resourceType === 'shipment') {
            lastEvent.set(event.resourceId, event);
            if (event.type === 'shipment.created') live.set(event.resourceId, event.data.object.lines);
            if (event.type === 'shipment.voided') live.delete(event.resourceId);
          }
          for (const [i, id] of items.entries()) {
            const held = [...live.values()]
              .flat()
              .filter((l) => l.orderItemId === id)
              .reduce((sum, l) => sum.plus(l.quantity), new Decimal(0));
            const limit = Math.min(ORDERED[i], accepted.get(id) ?? ORDERED[i]);
            assert.ok(held.lte(limit), `after event ${event.sequence}: line ${i + 1} holds ${held} of ${limit}`);
          }
        }
        for (const [id, event] of lastEvent) {
          const got = await ctx().request('GET', `/api/v1/shipments/${id}`, { as: t });
          assert.deepEqual(event.data.object, got.body);
          assert.equal(event.resourceVersion, got.body.version);
        }
      }),
      { numRuns: 4 },
    );
  });
});
