import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventBus } from '../../src/events/bus.ts';
import { commitHeads, commitPayload, filterTakes } from '../../src/log/filter.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';

const head = (type: string, resourceId: string | null = 'ord_1') => ({
  type,
  resourceType: type.split('.')[0],
  resourceId,
});
const written = (type: string, resourceId = 'ord_1') => ({ type, resourceType: type.split('.')[0], resourceId });

/** Whether the subscription was woken within a turn of the event loop. */
async function wokenNow(woken: Promise<void>): Promise<boolean> {
  return Promise.race([
    woken.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20)),
  ]);
}

describe('the event bus wakes a filtered long poll only for a commit it would answer', () => {
  it('takes a commit by type, wildcard, resource type and id; unknown heads wake everyone', async () => {
    const bus = new EventBus();
    const invoices = bus.subscribe('biz_1', 5_000, undefined, (e) => filterTakes({ types: ['invoice.*'] }, e));
    const oneOrder = bus.subscribe('biz_1', 5_000, undefined, (e) => filterTakes({ resourceId: 'ord_2' }, e));
    const anything = bus.subscribe('biz_1', 5_000);
    bus.notify('biz_1', [head('order.created'), head('item.updated', 'itm_1')]);
    assert.equal(await wokenNow(anything.woken), true);
    assert.equal(await wokenNow(invoices.woken), false);
    assert.equal(await wokenNow(oneOrder.woken), false);
    assert.equal(bus.waiting, 2);

    bus.notify('biz_2', [head('invoice.created', 'inv_1')]);
    assert.equal(await wokenNow(invoices.woken), false, 'another business');
    bus.notify('biz_1', [head('order.updated', 'ord_2')]);
    assert.equal(await wokenNow(oneOrder.woken), true);
    bus.notify('biz_1', null);
    assert.equal(await wokenNow(invoices.woken), true, 'a commit whose events are not known wakes every waiter');
    assert.equal(bus.waiting, 0);
  });

  it("holds at most maxPerBusiness waiters of one business, so one tenant's long polls cannot use up another's", async () => {
    const bus = new EventBus(10, 3);
    const flood = Array.from({ length: 5 }, () => bus.subscribe('biz_1', 5_000));
    assert.deepEqual(
      flood.map((w) => w.ready),
      [true, true, true, false, false],
    );
    const other = bus.subscribe('biz_2', 5_000);
    assert.equal(other.ready, true, 'another business still waits');
    assert.equal(bus.waiting, 4);
    flood[0].cancel();
    assert.equal(bus.subscribe('biz_1', 5_000).ready, true, 'a place freed is taken again');
    bus.close();
  });

  it("hears a detailed notification, skips its bare twin, and wakes everyone on an earlier release's bare one", async () => {
    const bus = new EventBus();
    const heard: Array<string | null> = [];
    bus.onNotify((businessId) => heard.push(businessId));
    const invoices = () =>
      bus.subscribe('biz_1', 5_000, undefined, (e) => filterTakes({ types: ['invoice.created'] }, e));

    const first = invoices();
    bus.hear(commitPayload('biz_1', [written('order.created')])!);
    bus.hear('biz_1');
    assert.equal(await wokenNow(first.woken), false, 'the bare twin of an order commit does not wake it');
    assert.deepEqual(heard, ['biz_1']);

    bus.hear('biz_1');
    assert.equal(await wokenNow(first.woken), true, 'a bare notification alone: an earlier release wrote');

    const second = invoices();
    bus.hear(commitPayload('biz_1', [written('invoice.created', 'inv_1')])!);
    assert.equal(await wokenNow(second.woken), true);
    bus.hear('not json {');
    bus.hear('{"broken');
    second.cancel();
  });

  it("keeps a commit's ids up to 64 heads, then only its types, and stays under PostgreSQL's 8,000 bytes", () => {
    const few = commitHeads([1, 2, 2].map((i) => written('order.created', `ord_${i}`)));
    assert.deepEqual(
      few.map((h) => h.resourceId),
      ['ord_1', 'ord_2'],
    );
    const many = commitHeads(Array.from({ length: 65 }, (_, i) => written('order.created', `ord_${i}`)));
    assert.deepEqual(many, [{ type: 'order.created', resourceType: 'order', resourceId: null }]);
    assert.equal(filterTakes({ resourceId: 'ord_7' }, many[0]), true, 'an unknown id may be the one');

    // The longest names there can be: 64 heads with ids would pass 8,000 bytes; their 20 types alone do not.
    const long = Array.from({ length: 64 }, (_, i) => ({
      type: `${'r'.repeat(32)}.${String(i % 20).padStart(32, 'n')}`,
      resourceType: 'r'.repeat(32),
      resourceId: `x_${'0'.repeat(40)}${i}`,
    }));
    const payload = commitPayload('biz_1', long)!;
    assert.ok(payload.length < 8000, `${payload.length} bytes`);
    assert.ok(
      JSON.parse(payload).events.every((e: unknown[]) => e[2] === null),
      'ids left out',
    );
    const tooMany = Array.from({ length: 200 }, (_, i) => ({
      ...long[0],
      type: `${'r'.repeat(32)}.${String(i).padStart(32, 'n')}`,
    }));
    assert.equal(commitPayload('biz_1', tooMany), null, 'only the bare business id goes: every waiter wakes');
  });
});

/** The bus of the context now running, counting how often long polls subscribe (each read of a waiting poll). */
let bus: EventBus & { subscriptions: number };
class CountingBus extends EventBus {
  subscriptions = 0;
  override subscribe(...args: Parameters<EventBus['subscribe']>) {
    this.subscriptions++;
    return super.subscribe(...args);
  }
}

describeEachBackend(
  'a filtered long poll through the API',
  (ctx) => {
    it("is not woken by the business's commits its filters skip, and answers the one they take", async () => {
      const t: Tenant = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, f);
      const after = (await ctx().request('GET', '/api/v1/events?after=0&limit=1000', { as: t })).body.lastSequence;
      const waiting = ctx().request('GET', `/api/v1/events?after=${after}&wait=10&types=invoice.*`, { as: t });
      while (bus.waiting === 0) await new Promise((r) => setTimeout(r, 10));
      const subscribed = bus.subscriptions;
      for (let i = 0; i < 3; i++)
        assert.equal((await patchOrder(ctx(), t, order.id, { order: { notes: `not an invoice ${i}` } })).status, 200);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(bus.subscriptions, subscribed, 'order commits did not wake the poll to read again');
      const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } });
      assert.equal(invoice.status, 201);
      const woken = await waiting;
      assert.deepEqual(
        woken.body.items.map((e: any) => [e.type, e.resourceId]),
        [['invoice.created', invoice.body.id]],
      );
    });
  },
  { events: () => (bus = new CountingBus()) },
);
