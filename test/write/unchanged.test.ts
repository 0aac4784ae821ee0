import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';
import { shipOk } from '../fulfilment/helpers.ts';
import type { KyselyPlugin } from 'kysely';
import { patchBuyer } from '../../src/buyers/service.ts';
import { patchShipment } from '../../src/fulfilment/shipment-service.ts';
import { patchInvoice } from '../../src/invoices/service.ts';
import { patchItem } from '../../src/items/service.ts';
import { patchOrder } from '../../src/orders/patch-service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';

const lastSequence = async (ctx: TestContext, t: Tenant): Promise<number> =>
  (await ctx.request('GET', '/api/v1/events?after=0&limit=1000', { as: t })).body.lastSequence;

/** A business with one of each resource a PATCH updates, each holding values a request can restate. */
async function setUp(ctx: TestContext, t: Tenant) {
  const f = await createFixture(ctx, t);
  const order = await createOrder(ctx, t, f, { notes: 'same', properties: { erp: { no: 1, tags: ['a'] } } });
  const line = order.orderItems[0];
  const contacts = await ctx.request('PATCH', `/api/v1/buyers/${f.buyerId}`, {
    as: t,
    body: { createEmails: [{ email: 'Orders@Acme.test', isPrimary: true }, { email: 'ap@acme.test' }] },
  });
  assert.equal(contacts.status, 200, JSON.stringify(contacts.body));
  const shipment = await shipOk(ctx, t, order.id, {
    carrier: { name: 'UPS', scac: 'UPSN' },
    trackingNumbers: ['1Z999AA10123456784'],
    lines: [{ orderItemId: line.id, quantity: 1 }],
  });
  const invoice = await ctx.request('POST', '/api/v1/invoices', {
    as: t,
    body: { orderId: order.id, notes: 'same', dueAt: '2030-02-01T00:00:00.000Z' },
  });
  assert.equal(invoice.status, 201, JSON.stringify(invoice.body));
  const itemId = (await ctx.request('GET', '/api/v1/items?limit=1', { as: t })).body.items[0].id as string;
  return { f, order, line, shipment, invoice: invoice.body, itemId };
}

describeEachBackend('an update decided before writing', (ctx) => {
  it('that restates what is there writes nothing: the same version, ETag and updatedAt, and no event', async () => {
    const t = await ctx().createTenant();
    const { f, order, line, shipment, invoice, itemId } = await setUp(ctx(), t);
    const read = async (path: string) => (await ctx().request('GET', path, { as: t })).body;
    const item = await read(`/api/v1/items/${itemId}`);
    const buyer = await read(`/api/v1/buyers/${f.buyerId}`);
    const primary = buyer.emails.find((e: { isPrimary: boolean }) => e.isPrimary);
    const before = await lastSequence(ctx(), t);
    const cases = [
      {
        path: `/api/v1/orders/${order.id}`,
        body: {
          // The same instant, written another way; the same quantity and price as numbers; properties merged in.
          order: { notes: 'same', expectedDeliveryAt: '2030-01-15T10:30:00Z', properties: { erp: { no: 1 } } },
          updateOrderItems: [{ id: line.id, quantity: Number(line.quantity), price: Number(line.price) }],
        },
      },
      { path: `/api/v1/orders/${order.id}`, body: { order: { properties: { erp: { tags: ['a'] } } } } },
      {
        path: `/api/v1/items/${itemId}`,
        body: {
          name: item.name,
          updateVariants: [{ id: item.variants[0].id, price: Number(item.variants[0].price) }],
        },
      },
      {
        path: `/api/v1/buyers/${f.buyerId}`,
        body: {
          // The primary named again, in another case, and marked primary again.
          buyer: { name: buyer.name, primaryEmail: 'orders@acme.test' },
          updateEmails: [{ id: primary.id, isPrimary: true }],
        },
      },
      { path: `/api/v1/invoices/${invoice.id}`, body: { notes: 'same', dueAt: '2030-02-01T00:00:00Z' } },
      {
        path: `/api/v1/shipments/${shipment.id}`,
        body: { carrier: { name: 'UPS', scac: 'UPSN' }, trackingNumbers: ['1Z999AA10123456784'] },
      },
    ];
    for (const c of cases) {
      const was = await ctx().request('GET', c.path, { as: t });
      const res = await ctx().request('PATCH', c.path, { as: t, body: c.body });
      assert.equal(res.status, 200, `${c.path}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body, was.body, c.path);
      assert.equal(res.headers.etag, was.headers.etag, c.path);
      assert.deepEqual(await read(c.path), was.body, `${c.path}: nothing was written`);
    }
    assert.equal(await lastSequence(ctx(), t), before, 'no event');
  });

  it('that only looks like it restates what is there is a change, with its version and event', async () => {
    const t = await ctx().createTenant();
    const { f, order, line, itemId } = await setUp(ctx(), t);
    // A total set by hand: an item update, even to the same quantity, recomputes it from the items.
    const priced = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      body: { order: { totalAmount: 999 } },
    });
    assert.notEqual(priced.body.totalAmount, order.totalAmount);
    let events = await lastSequence(ctx(), t);
    const recomputed = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, {
      as: t,
      body: { updateOrderItems: [{ id: line.id, quantity: Number(line.quantity) }] },
    });
    assert.equal(recomputed.body.totalAmount, order.totalAmount);
    assert.equal(recomputed.body.version, priced.body.version + 1);
    assert.equal(await lastSequence(ctx(), t), ++events);

    // A primary email no contact has yet: it becomes a new primary contact.
    const buyer = await ctx().request('PATCH', `/api/v1/buyers/${f.buyerId}`, {
      as: t,
      body: { buyer: { primaryEmail: 'new@acme.test' } },
    });
    assert.equal(buyer.body.primaryEmail, 'new@acme.test');
    assert.equal(buyer.body.emails.length, 3);
    assert.equal(await lastSequence(ctx(), t), ++events);

    // A variant's price the same, its place in the list not.
    const item = (await ctx().request('GET', `/api/v1/items/${itemId}`, { as: t })).body;
    const moved = await ctx().request('PATCH', `/api/v1/items/${itemId}`, {
      as: t,
      body: { updateVariants: [{ id: item.variants[0].id, price: Number(item.variants[0].price), sequence: 99 }] },
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.notDeepEqual(moved.body, item);
    assert.equal(await lastSequence(ctx(), t), ++events);
  });

  it('under an Idempotency-Key is stored with its answer, in its own transaction, and replayed', async () => {
    const t = await ctx().createTenant();
    const { order } = await setUp(ctx(), t);
    const headers = { 'idempotency-key': 'restate-1' };
    const before = await lastSequence(ctx(), t);
    const body = { order: { notes: 'same' } };
    const first = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, { as: t, body, headers });
    assert.equal(first.status, 200);
    assert.equal(first.body.version, order.version);
    const again = await ctx().request('PATCH', `/api/v1/orders/${order.id}`, { as: t, body, headers });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal(await lastSequence(ctx(), t), before, 'no event');
    const stored = await ctx()
      .db.selectFrom('idempotency_keys')
      .select(['response_status'])
      .where('business_id', '=', t.businessId)
      .where('key', '=', 'restate-1')
      .execute();
    assert.deepEqual(stored, [{ response_status: 200 }]);
  });

  it('decides before it writes: a restating PATCH sends no INSERT, UPDATE or DELETE of the resource', async () => {
    const t = await ctx().createTenant();
    const { f, order, line, shipment, invoice, itemId } = await setUp(ctx(), t);
    const item = (await ctx().request('GET', `/api/v1/items/${itemId}`, { as: t })).body;
    const buyer = (await ctx().request('GET', `/api/v1/buyers/${f.buyerId}`, { as: t })).body;
    const writes: string[] = [];
    const spy: KyselyPlugin = {
      transformQuery: ({ node }) => {
        const table = JSON.stringify(node).match(/"name":"(\w+)"/)?.[1];
        // Every write takes its business's write lock and time (src/write/clock.ts), a change or not.
        const write =
          node.kind === 'InsertQueryNode' || node.kind === 'UpdateQueryNode' || node.kind === 'DeleteQueryNode';
        if (write && table !== 'write_clocks') writes.push(`${node.kind} ${table}`);
        return node;
      },
      transformResult: async ({ result }) => result,
    };
    const runner = createWriteRunner(ctx().db.withPlugin(spy));
    const scope = { businessId: t.businessId, actor: SYSTEM };
    const results = [
      await runner.run(scope, (c) =>
        patchOrder(
          c,
          order.id,
          { order: { notes: 'same' }, updateOrderItems: [{ id: line.id, quantity: 2 }] },
          undefined,
        ),
      ),
      await runner.run(scope, (c) => patchItem(c, itemId, { name: item.name })),
      await runner.run(scope, (c) => patchBuyer(c, f.buyerId, { buyer: { name: buyer.name } })),
      await runner.run(scope, (c) => patchInvoice(c, invoice.id, { notes: 'same' }, undefined)),
      await runner.run(scope, (c) =>
        patchShipment(c, shipment.id, { trackingNumbers: ['1Z999AA10123456784'] }, undefined),
      ),
    ];
    assert.deepEqual(
      results.map((r) => r.unchanged),
      [true, true, true, true, true],
    );
    assert.deepEqual([...writes], []);
    // The spy sees writes: a real change writes.
    await runner.run(scope, (c) => patchInvoice(c, invoice.id, { notes: 'changed' }, undefined));
    assert.ok(writes.includes('UpdateQueryNode invoices'), JSON.stringify(writes));
  });

  it('of random PATCHes: the version stays exactly when a GET shows no difference, and a change has one event with changes', async () => {
    const t = await ctx().createTenant();
    const { f, order, line } = await setUp(ctx(), t);
    let seed = 62;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(values: T[]): T => values[Math.floor(random() * values.length)];
    const some = (parts: Record<string, () => unknown>) => {
      const chosen = Object.entries(parts).filter(() => random() < 0.4);
      const [name, make] = chosen[0] ?? pick(Object.entries(parts));
      return Object.fromEntries([[name, make()], ...chosen.slice(1).map(([n, m]) => [n, m()])]);
    };
    const orderBody = () =>
      some({
        order: () =>
          some({
            notes: () => pick(['same', 'other']),
            expectedDeliveryAt: () =>
              pick(['2030-01-15T10:30:00.000Z', '2030-01-15T10:30:00Z', '2030-01-16T00:00:00Z']),
            properties: () => pick([{ erp: { no: 1 } }, { erp: { no: 2 } }, { erp: { tags: ['a'] } }, { x: null }]),
            totalAmount: () => pick([20, 999]),
          }),
        updateOrderItems: () =>
          [some({ quantity: () => pick([2, 3]), price: () => pick([10, 10.5]) })].map((u) => ({ id: line.id, ...u })),
      });
    const buyer = (await ctx().request('GET', `/api/v1/buyers/${f.buyerId}`, { as: t })).body;
    const [first, second] = buyer.emails.map((e: { id: string }) => e.id);
    const buyerBody = () =>
      some({
        buyer: () =>
          some({
            name: () => pick(['Acme Foods', 'Acme Two']),
            primaryEmail: () => pick(['orders@acme.test', 'Orders@Acme.test', 'ap@acme.test']),
            properties: () => pick([{ tier: 1 }, { tier: 2 }]),
          }),
        updateEmails: () => [
          { id: pick([first, second]), ...some({ contactName: () => pick(['Ann', 'Bo']), isPrimary: () => true }) },
        ],
        partnershipStatus: () => pick(['ACTIVE', 'PAUSED']),
      });
    type Json = Record<string, any>;
    const child = (list: Json[], id: string) => list.find((c) => c.id === id);
    // Where each part of a body shows in the resource: a PATCH answered unchanged must already show it.
    const resources = [
      {
        path: `/api/v1/orders/${order.id}`,
        body: orderBody,
        parts: (shown: Json, sent: Json) => [
          [shown, sent.order],
          ...(sent.updateOrderItems ?? []).map((u: Json) => [child(shown.orderItems, u.id), u]),
        ],
      },
      {
        path: `/api/v1/buyers/${f.buyerId}`,
        body: buyerBody,
        parts: (shown: Json, sent: Json) => [
          [shown, sent.buyer],
          [shown, { partnershipStatus: sent.partnershipStatus }],
          ...(sent.updateEmails ?? []).map((u: Json) => [child(shown.emails, u.id), u]),
        ],
      },
    ];
    // Equal as the API means it: the same instant, the same amount, an email in any case.
    const shows = (shown: unknown, sent: unknown): boolean => {
      if (sent === undefined) return true;
      if (sent !== null && typeof sent === 'object' && !Array.isArray(sent))
        return Object.entries(sent).every(([key, value]) => shows((shown as Json | null)?.[key], value));
      if (typeof sent === 'number') return Number(shown) === sent;
      if (typeof sent === 'string' && /^\d{4}-\d\d-\d\dT/.test(sent))
        return Date.parse(String(shown)) === Date.parse(sent);
      if (typeof sent === 'string') return String(shown).toLowerCase() === sent.toLowerCase();
      return isDeepStrictEqual(shown, sent);
    };
    const withoutTime = ({ updatedAt, version, ...rest }: Record<string, unknown>) => rest;
    let unchangedSeen = 0;
    for (let i = 0; i < 40; i++) {
      const { path, body, parts } = pick(resources);
      const sent = body();
      const was = (await ctx().request('GET', path, { as: t })).body;
      const since = await lastSequence(ctx(), t);
      const res = await ctx().request('PATCH', path, { as: t, body: sent });
      const what = `${path} ${JSON.stringify(sent)}: ${JSON.stringify(res.body)}`;
      if (res.status !== 200) {
        assert.equal(res.status, 422, what);
        continue;
      }
      const now = (await ctx().request('GET', path, { as: t })).body;
      for (const [shown, part] of parts(now, sent))
        assert.ok(shows(shown, part), `${JSON.stringify(part)} not shown: ${what}`);
      const events = (await ctx().request('GET', `/api/v1/events?after=${since}&limit=1000`, { as: t })).body.items;
      if (isDeepStrictEqual(withoutTime(now), withoutTime(was))) {
        unchangedSeen++;
        assert.deepEqual(now, was, `unchanged, so nothing moves: ${what}`);
        assert.deepEqual(events, [], what);
      } else {
        assert.equal(events.length, 1, what);
        assert.ok(Object.keys(events[0].data.changes).length > 0, what);
        assert.notEqual(now.updatedAt, was.updatedAt, what);
      }
    }
    assert.ok(unchangedSeen >= 3, `only ${unchangedSeen} unchanged PATCHes`);
  });
});
