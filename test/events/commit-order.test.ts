import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, createOrder, type OrderFixture } from '../helpers/orders.ts';

type Op = 'createOrder' | 'patchOrder' | 'createItem' | 'patchItem' | 'createBuyer' | 'patchBuyer' | 'patchInvoice';
const OPS: Op[] = ['createOrder', 'patchOrder', 'createItem', 'patchItem', 'createBuyer', 'patchBuyer', 'patchInvoice'];

interface Setup {
  t: Tenant;
  f: OrderFixture;
  orderIds: string[];
  itemId: string;
  invoiceId: string;
}

/** One write of `op` under its own request id; each makes exactly one event. */
async function write(ctx: TestContext, s: Setup, op: Op, n: number, requestId: string): Promise<void> {
  const as = s.t;
  const headers = { 'x-request-id': requestId };
  const call = (method: string, url: string, body: unknown) => ctx.request(method, url, { as, body, headers });
  const res = await {
    createOrder: () =>
      call('POST', `/api/v1/buyers/${s.f.buyerId}/orders`, {
        expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
        orderItems: [{ itemVariantId: s.f.variantIds[0], quantity: 1 }],
      }),
    patchOrder: () =>
      call('PATCH', `/api/v1/orders/${s.orderIds[n % s.orderIds.length]}`, { order: { notes: `n${n}` } }),
    createItem: () =>
      call('POST', '/api/v1/items', {
        item: { name: `Item ${n} ${requestId}` },
        variants: [{ currency: 'AUD', price: 1 }],
      }),
    patchItem: () => call('PATCH', `/api/v1/items/${s.itemId}`, { description: `d${n}` }),
    createBuyer: () => call('POST', '/api/v1/buyers', { buyer: { name: `Buyer ${n}` } }),
    patchBuyer: () => call('PATCH', `/api/v1/buyers/${s.f.buyerId}`, { buyer: { name: `Acme ${n}` } }),
    patchInvoice: () => call('PATCH', `/api/v1/invoices/${s.invoiceId}`, { notes: `i${n}` }),
  }[op]();
  assert.ok(res.status === 200 || res.status === 201, `${op}: ${res.status} ${JSON.stringify(res.body)}`);
}

describeEachBackend('commit order', (ctx) => {
  it('gives every write of a business a time later than every write committed before it, under concurrent writes of every resource', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...OPS), { minLength: 4, maxLength: 24 }),
        fc.integer({ min: 1, max: 8 }),
        async (ops, concurrency) => {
          const t = await ctx().createTenant();
          const f = await createFixture(ctx(), t);
          const orderIds = [(await createOrder(ctx(), t, f)).id, (await createOrder(ctx(), t, f)).id];
          const item = await ctx().request('POST', '/api/v1/items', {
            as: t,
            body: { item: { name: 'Patched' }, variants: [{ currency: 'AUD', price: 1 }] },
          });
          const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: orderIds[0] } });
          const setup: Setup = { t, f, orderIds, itemId: item.body.id, invoiceId: invoice.body.id };
          const after = (await ctx().request('GET', '/api/v1/events?after=0&limit=100', { as: t })).body.lastSequence;

          const tag = `req_${Math.random().toString(36).slice(2)}_`;
          let next = 0;
          await Promise.all(
            Array.from({ length: concurrency }, async () => {
              while (next < ops.length) {
                const i = next++;
                await write(ctx(), setup, ops[i], i, `${tag}${i}`);
              }
            }),
          );

          // The feed's order is the order in which the writes committed.
          const events = (await ctx().request('GET', `/api/v1/events?after=${after}&limit=100`, { as: t })).body.items;
          assert.equal(events.length, ops.length, 'one event per write');
          let previous = '';
          for (const event of events) {
            assert.ok(event.requestId.startsWith(tag));
            const { object } = event.data;
            assert.equal(object.updatedAt, event.occurredAt, `${event.type}: updatedAt is the write's time`);
            if (event.type.endsWith('.created')) assert.equal(object.createdAt, event.occurredAt);
            assert.ok(
              event.occurredAt > previous,
              `${event.type} at ${event.occurredAt} committed after a write at ${previous}`,
            );
            previous = event.occurredAt;
          }
        },
      ),
      { numRuns: 6 },
    );
  });
});
