import assert from 'node:assert/strict';
import { Decimal } from 'decimal.js';
import fc from 'fast-check';

/**
 * 32 writers at once on one order: acknowledgements, shipments, voids and order PATCHes, through
 * `send` (one app in process, or several server processes). Replaying the feed in order, no line
 * ever holds more in shipments not voided than the acknowledgement then current lets ship; every
 * shipment's last event shows it as its GET does; every refusal is a 409 naming a line.
 */
export type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

const ORDERED = [5, 3, 2];
export const WRITERS = 32;

export type Op =
  | {
      kind: 'ack';
      decisions: Array<{ decision: 'ACCEPTED' | 'REJECTED' | 'QUANTITY_CHANGED' | 'BACKORDERED'; q: number }>;
    }
  | { kind: 'ship'; lines: Array<{ line: number; quantity: number }>; packaged: boolean }
  | { kind: 'void'; pick: number }
  | { kind: 'patch'; status: string };

export const opArb: fc.Arbitrary<Op> = fc.oneof(
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

async function runWriters(send: Send, orderId: string, items: string[], ops: Op[]) {
  const shipments: string[] = [];
  let next = 0;
  const answers: Array<{ op: Op; status: number; body: any }> = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < ops.length) {
        const op = ops[next++];
        let res: { status: number; body: any };
        if (op.kind === 'ack')
          res = await send('POST', `/api/v1/orders/${orderId}/acknowledgements`, bodyOf(op, items));
        else if (op.kind === 'ship') {
          res = await send('POST', `/api/v1/orders/${orderId}/shipments`, bodyOf(op, items));
          if (res.status === 201) shipments.push(res.body.id);
        } else if (op.kind === 'void') {
          if (shipments.length === 0) continue;
          res = await send('DELETE', `/api/v1/shipments/${shipments[op.pick % shipments.length]}`);
        } else res = await send('PATCH', `/api/v1/orders/${orderId}`, bodyOf(op, items));
        answers.push({ op, ...res });
      }
    }),
  );
  return answers;
}

export async function writeConcurrently(send: Send, ops: Op[]): Promise<void> {
  const item = await send('POST', '/api/v1/items', {
    item: { name: 'Tea' },
    variants: ORDERED.map((_, i) => ({ variantName: `V${i}`, currency: 'AUD', price: 1 + i })),
  });
  const buyer = await send('POST', '/api/v1/buyers', { buyer: { name: 'Corner Grocer' } });
  const order = (
    await send(`POST`, `/api/v1/buyers/${buyer.body.id}/orders`, {
      expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
      orderItems: ORDERED.map((quantity, i) => ({ itemVariantId: item.body.variantIds[i], quantity })),
    })
  ).body;
  const items: string[] = order.orderItems.map((i: { id: string }) => i.id);
  const answers = await runWriters(send, order.id, items, ops);
  for (const a of answers) {
    const ok = a.status < 300 || (a.status === 409 && a.body.errorCode === 'CONFLICT' && a.op.kind !== 'patch');
    assert.ok(ok, `${JSON.stringify(a.op)} -> ${a.status} ${JSON.stringify(a.body)}`);
    if (a.status === 409) assert.match(a.body.message, /^Line \d \(oi_\w+\) has /);
  }

  const acks = (await send('GET', `/api/v1/orders/${order.id}/acknowledgements`)).body.items;
  const ackById = new Map<string, any>(acks.map((a: any) => [a.id, a]));
  const events = [];
  for (let after = 0, more = true; more; ) {
    const page = (await send('GET', `/api/v1/events?after=${after}&limit=1000`)).body;
    events.push(...page.items.filter((e: any) => e.resourceId === order.id || e.data.object.orderId === order.id));
    ({ lastSequence: after, hasMore: more } = page);
  }
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
    const got = await send('GET', `/api/v1/shipments/${id}`);
    assert.deepEqual(event.data.object, got.body);
    assert.equal(event.resourceVersion, got.body.version);
  }
  await checkKeptExact(send, order.id, items, accepted, live);
}

/**
 * What the writes kept beside the shipments is exact after them: the list's totals, read from the
 * shipment counts, are the business's shipments walked and counted; and what is left of each line,
 * kept in its shipped quantity, ships in full while one unit more is refused.
 */
async function checkKeptExact(
  send: Send,
  orderId: string,
  items: string[],
  accepted: Map<string, number>,
  live: Map<string, Array<{ orderItemId: string; quantity: number }>>,
) {
  const total = async (query: string) => (await send('GET', `/api/v1/shipments?limit=1&${query}`)).body.total;
  // Every shipment of the business (other orders' too, where a test reuses it), walked by cursor.
  const all: Array<{ status: string }> = [];
  for (let page = await send('GET', '/api/v1/shipments?limit=100'); ; ) {
    all.push(...page.body.items);
    if (!page.body.nextCursor) break;
    page = await send('GET', `/api/v1/shipments?limit=100&cursor=${encodeURIComponent(page.body.nextCursor)}`);
  }
  for (const status of ['', 'IN_TRANSIT', 'VOIDED'])
    for (const since of ['', 'modifiedSince=2000-01-01T00:00:00Z', 'createdSince=2000-01-01T00:00:00Z'])
      assert.equal(
        await total(`${status && `status=${status}`}&${since}`),
        all.filter((s) => !status || s.status === status).length,
        status + since,
      );
  const left = items.map((id, i) => {
    const held = [...live.values()].flat().filter((l) => l.orderItemId === id);
    return Math.min(ORDERED[i], accepted.get(id) ?? ORDERED[i]) - held.reduce((sum, l) => sum + l.quantity, 0);
  });
  const rest = items.flatMap((id, i) => (left[i] > 0 ? [{ orderItemId: id, quantity: left[i] }] : []));
  if (rest.length > 0) {
    const shipped = await send('POST', `/api/v1/orders/${orderId}/shipments`, { lines: rest });
    assert.equal(shipped.status, 201, JSON.stringify(shipped.body));
  }
  for (const id of items) {
    const more = await send('POST', `/api/v1/orders/${orderId}/shipments`, {
      lines: [{ orderItemId: id, quantity: 1 }],
    });
    assert.equal(more.status, 409, JSON.stringify(more.body));
  }
}
