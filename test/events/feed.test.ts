import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';
import { securityCases } from '../helpers/security.ts';

/** Every event of the tenant, read through the feed a page at a time. */
async function allEvents(ctx: TestContext, t: Tenant, query = '', limit = 7) {
  const events: any[] = [];
  let after = 0;
  for (;;) {
    const res = await ctx.request('GET', `/api/v1/events?after=${after}&limit=${limit}${query}`, { as: t });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    events.push(...res.body.items);
    assert.ok(res.body.lastSequence >= after);
    after = res.body.lastSequence;
    if (!res.body.hasMore) return { events, lastSequence: after };
  }
}

/** The events appended since `after`. */
async function eventsAfter(ctx: TestContext, t: Tenant, after: number) {
  const res = await ctx.request('GET', `/api/v1/events?after=${after}&limit=1000`, { as: t });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.items as any[];
}

async function latest(ctx: TestContext, t: Tenant): Promise<number> {
  return (await allEvents(ctx, t, '', 1000)).lastSequence;
}

describeEachBackend('the event log', (ctx) => {
  it('appends one event per write with the resource as a GET shows it right after, and numbers them 1..N', async () => {
    const t = await ctx().createTenant();
    // Opening the business made its first key.
    const [first] = await eventsAfter(ctx(), t, 0);
    assert.equal(first.sequence, 1);
    assert.equal(first.type, 'api_key.created');
    assert.equal(first.resourceId, t.keyId);
    assert.equal(first.data.object.apiKey, undefined, 'never the key');
    assert.deepEqual(first.actor, { type: 'system', id: 'supplyline', name: 'Supplyline' });

    const f = await createFixture(ctx(), t);
    let since = await latest(ctx(), t);
    const item = await ctx().request('POST', '/api/v1/items', {
      as: t,
      headers: { 'x-request-id': 'req-events-1', 'idempotency-key': 'ev-item-1' },
      body: {
        item: { name: 'Evented', properties: { erp: { code: 'A1' } } },
        variants: [{ variantName: 'One', currency: 'AUD', price: 3 }],
      },
    });
    assert.equal(item.status, 201);
    const [created] = await eventsAfter(ctx(), t, since);
    const shown = await ctx().request('GET', `/api/v1/items/${item.body.id}`, { as: t });
    assert.equal(created.type, 'item.created');
    assert.equal(created.sequence, since + 1);
    assert.deepEqual(created.data.object, shown.body);
    assert.equal(created.data.changes, undefined);
    assert.equal(created.resourceVersion, 1);
    assert.equal(created.requestId, 'req-events-1');
    assert.equal(created.idempotencyKey, 'ev-item-1');
    assert.deepEqual(created.actor, { type: 'api_key', id: t.keyId, name: null });

    // A replay appends nothing; a refused write appends nothing.
    since = created.sequence;
    const replay = await ctx().request('POST', '/api/v1/items', {
      as: t,
      headers: { 'idempotency-key': 'ev-item-1' },
      body: {
        item: { name: 'Evented', properties: { erp: { code: 'A1' } } },
        variants: [{ variantName: 'One', currency: 'AUD', price: 3 }],
      },
    });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal((await ctx().request('PATCH', `/api/v1/items/${item.body.id}`, { as: t, body: {} })).status, 400);
    assert.equal(
      (await ctx().request('PATCH', '/api/v1/items/itm_missing', { as: t, body: { name: 'x' } })).status,
      404,
    );
    const order = await createOrder(ctx(), t, f);
    const stale = await patchOrder(ctx(), t, order.id, { order: { notes: 'late' } }, { 'if-match': '"7"' });
    assert.equal(stale.status, 412);
    const afterRefusals = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      afterRefusals.map((e) => e.type),
      ['order.created'],
      'only the order that was created',
    );

    // An update names what changed: fields, property paths, child records.
    since = afterRefusals[0].sequence;
    const patched = await ctx().request('PATCH', `/api/v1/items/${item.body.id}`, {
      as: t,
      body: {
        name: 'Evented 2',
        properties: { erp: { code: 'B2', synced: true } },
        createVariants: [{ variantName: 'Two', currency: 'AUD', price: 4 }],
        updateVariants: [{ id: shown.body.variants[0].id, price: 3.5 }],
      },
    });
    assert.equal(patched.status, 200);
    const [updated] = await eventsAfter(ctx(), t, since);
    assert.equal(updated.type, 'item.updated');
    assert.equal(updated.resourceVersion, 2);
    assert.deepEqual(updated.data.object, patched.body);
    assert.deepEqual(updated.data.changes.name, { from: 'Evented', to: 'Evented 2' });
    assert.deepEqual(updated.data.changes['properties.erp.code'], { from: 'A1', to: 'B2' });
    assert.deepEqual(updated.data.changes['properties.erp.synced'], { to: true }, 'a key that came has no from');
    assert.equal(updated.data.changes.variants.created.length, 1);
    assert.equal(updated.data.changes.variants.created[0].variantName, 'Two');
    assert.deepEqual(updated.data.changes.variants.updated, [
      { id: shown.body.variants[0].id, changes: { price: { from: 3, to: 3.5 } } },
    ]);
    assert.deepEqual(updated.data.changes.variants.deleted, []);
    assert.equal(updated.data.changes.updatedAt, undefined, 'implied by the event');

    // Orders: update with items, ingestion (once), delete.
    since = updated.sequence;
    const orderPatch = await patchOrder(ctx(), t, order.id, {
      order: { phase: 'ACTIVE' },
      createOrderItems: [
        { itemListEntryId: f.entryIds[1], quantity: 1, price: 2.5, cost: 1, unitOfMeasure: 'EA', currency: 'AUD' },
      ],
    });
    assert.equal(orderPatch.status, 200, JSON.stringify(orderPatch.body));
    assert.equal(
      (await ctx().request('POST', '/api/v1/orders', { as: t, body: { orderId: order.id, businessId: t.businessId } }))
        .status,
      202,
    );
    assert.equal(
      (await ctx().request('POST', '/api/v1/orders', { as: t, body: { orderId: order.id, businessId: t.businessId } }))
        .status,
      202,
    );
    const afterIngest = await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t });
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${order.id}`, { as: t })).status, 204);
    const orderEvents = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      orderEvents.map((e) => e.type),
      ['order.updated', 'order.ingested', 'order.deleted'],
    );
    assert.deepEqual(orderEvents[0].data.object, orderPatch.body);
    assert.deepEqual(orderEvents[0].data.changes.phase, { from: 'PENDING', to: 'ACTIVE' });
    assert.equal(orderEvents[0].data.changes.orderItems.created.length, 1);
    assert.ok(orderEvents[0].data.changes.totalAmount);
    assert.deepEqual(orderEvents[1].data.object, afterIngest.body);
    assert.equal(orderEvents[2].data.object.phase, 'DELETED');
    assert.notEqual(orderEvents[2].data.object.deletedAt, null);
    assert.deepEqual(
      orderEvents.map((e) => e.resourceVersion),
      [2, 3, 4],
    );

    // The whole feed: 1..N without gaps, the same at any page size.
    const { events } = await allEvents(ctx(), t);
    assert.deepEqual(
      events.map((e) => e.sequence),
      events.map((_, i) => i + 1),
    );
    assert.equal(new Set(events.map((e) => e.id)).size, events.length);
    assert.deepEqual((await allEvents(ctx(), t, '', 1)).events, events);
  });

  it('appends several events of one write together: consecutive sequences, versions counted on per resource, one wake-up', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    const since = await latest(ctx(), t);
    const { createWriteRunner } = await import('../../src/write/runner.ts');
    const woken: string[] = [];
    const runner = createWriteRunner(ctx().db, { onEvents: (businessId) => woken.push(businessId) });
    const object = (id: string) => ({ id });
    await runner.run({ businessId: t.businessId, actor: { type: 'system', id: 'test', name: null } }, async (w) => {
      w.emit({
        type: 'order.updated',
        resourceType: 'order',
        resourceId: order.id,
        object: object(order.id),
        changes: {},
      });
      w.emit({ type: 'item.updated', resourceType: 'item', resourceId: 'itm_other', object: object('itm_other') });
      w.emit({
        type: 'order.updated',
        resourceType: 'order',
        resourceId: order.id,
        object: object(order.id),
        changes: {},
      });
    });
    const appended = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      appended.map((e) => [e.sequence, e.resourceId, e.resourceVersion]),
      [
        [since + 1, order.id, 2],
        [since + 2, 'itm_other', 1],
        [since + 3, order.id, 3],
      ],
    );
    assert.equal(new Set(appended.map((e) => e.id)).size, 3);
    assert.ok(appended.every((e) => e.occurredAt === appended[0].occurredAt && e.actor.id === 'test'));
    assert.deepEqual(woken, [t.businessId]);
  });

  it("numbers a resource's versions right when two writes of it append at once (the second waits for the first's commit under the write lock)", async () => {
    const t = await ctx().createTenant();
    const since = await latest(ctx(), t);
    const { appendEvents } = await import('../../src/log/append.ts');
    const { takeWriteTime } = await import('../../src/write/clock.ts');
    const meta = {
      businessId: t.businessId,
      actor: { type: 'system', id: 'test', name: null },
      requestId: null,
      idempotencyKey: null,
      now: new Date().toISOString(),
    };
    const event = {
      type: 'buyer.updated',
      resourceType: 'buyer' as const,
      resourceId: 'byr_shared',
      object: { id: 'byr_shared' },
    };
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstAppended!: () => void;
    const appended = new Promise<void>((resolve) => {
      firstAppended = resolve;
    });
    // The first write appends and holds its transaction open; the second appends meanwhile.
    const first = ctx()
      .db.transaction()
      .execute(async (trx) => {
        await takeWriteTime(trx, t.businessId, Date.now());
        await appendEvents(trx, [{ meta, events: [event], traceParent: null }], 'test_channel');
        firstAppended();
        await held;
      });
    await appended;
    const second = ctx()
      .db.transaction()
      .execute(async (trx) => {
        await takeWriteTime(trx, t.businessId, Date.now());
        await appendEvents(trx, [{ meta, events: [event], traceParent: null }], 'test_channel');
      });
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await Promise.all([first, second]);
    const events = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      events.map((e) => [e.sequence, e.resourceVersion]),
      [
        [since + 1, 1],
        [since + 2, 2],
      ],
    );
  });

  it('appends the events of invoices, buyers, price lists and item deletes', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const order = await createOrder(ctx(), t, f);
    let since = await latest(ctx(), t);
    const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } });
    assert.equal(invoice.status, 201);
    const paid = await ctx().request('PATCH', `/api/v1/invoices/${invoice.body.id}`, {
      as: t,
      body: { status: 'PAID' },
    });
    const buyerPatch = await ctx().request('PATCH', `/api/v1/buyers/${f.buyerId}`, {
      as: t,
      body: { buyer: { name: 'Acme Foods 2' }, createEmails: [{ email: 'orders@acme.test', isPrimary: true }] },
    });
    assert.equal(buyerPatch.status, 200, JSON.stringify(buyerPatch.body));
    const list = await ctx().request('POST', '/api/v1/pricing', {
      as: t,
      body: { itemListData: { label: 'Trade' }, entries: [{ itemVariantId: f.variantIds[0] }], partnerships: [] },
    });
    assert.equal(list.status, 201, JSON.stringify(list.body));
    const item = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Gone soon' }, variants: [{ currency: 'AUD', price: 1 }] },
    });
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${item.body.id}`, { as: t })).status, 204);

    const events = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      events.map((e) => e.type),
      ['invoice.created', 'invoice.updated', 'buyer.updated', 'price_list.created', 'item.created', 'item.deleted'],
    );
    assert.deepEqual(events[0].data.object, invoice.body);
    assert.deepEqual(events[1].data.object, paid.body);
    assert.deepEqual(events[1].data.changes.status, { from: 'DRAFT', to: 'PAID' });
    assert.deepEqual(events[2].data.object, buyerPatch.body);
    assert.equal(events[2].data.changes.emails.created[0].email, 'orders@acme.test');
    assert.deepEqual(
      events[3].data.object,
      (await ctx().request('GET', `/api/v1/pricing/${list.body.id}`, { as: t })).body,
    );
    assert.equal(events[5].data.object.status, 'DELETED');
    since = events[5].sequence;

    // Keys from the CLI's functions are events too, with the operator as actor.
    const spare = await ctx().addKey(t);
    await ctx().revokeKey(t, spare.keyId);
    await ctx().revokeKey(t, spare.keyId);
    const keys = await eventsAfter(ctx(), t, since);
    assert.deepEqual(
      keys.map((e) => [e.type, e.resourceId]),
      [
        ['api_key.created', spare.keyId],
        ['api_key.revoked', spare.keyId],
      ],
    );
    assert.match(keys[1].data.object.revokedAt, /^\d{4}-/);
  });

  it('filters by type, wildcard, resource, and moves lastSequence past what it skips', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const a = await createOrder(ctx(), t, f);
    const b = await createOrder(ctx(), t, f);
    assert.equal((await patchOrder(ctx(), t, a.id, { order: { notes: 'x' } })).status, 200);
    const all = (await allEvents(ctx(), t)).events;
    const last = all.at(-1).sequence;

    const created = await ctx().request('GET', '/api/v1/events?types=order.created', { as: t });
    assert.deepEqual(
      created.body.items.map((e: any) => e.resourceId),
      [a.id, b.id],
    );
    assert.equal(created.body.lastSequence, last);
    assert.equal(created.body.hasMore, false);
    const orders = await ctx().request('GET', '/api/v1/events?types=order.*,buyer.created', { as: t });
    assert.deepEqual(
      orders.body.items.map((e: any) => e.type),
      ['buyer.created', 'order.created', 'order.created', 'order.updated'],
    );
    const one = await ctx().request('GET', `/api/v1/events?resourceType=order&resourceId=${a.id}&limit=1`, { as: t });
    assert.deepEqual(
      one.body.items.map((e: any) => e.type),
      ['order.created'],
    );
    assert.equal(one.body.hasMore, true);
    assert.equal(one.body.lastSequence, one.body.items[0].sequence);

    // One resource's history, also after a delete; another tenant's resource is a 404.
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${a.id}`, { as: t })).status, 204);
    const history = await ctx().request('GET', `/api/v1/orders/${a.id}/events`, { as: t });
    assert.deepEqual(
      history.body.items.map((e: any) => e.type),
      ['order.created', 'order.updated', 'order.deleted'],
    );
    const other = await ctx().createTenant();
    assert.equal((await ctx().request('GET', `/api/v1/orders/${a.id}/events`, { as: other })).status, 404);
    assert.equal((await ctx().request('GET', '/api/v1/orders/ord_missing/events', { as: t })).status, 404);
    const otherFeed = await eventsAfter(ctx(), other, 0);
    assert.deepEqual(
      otherFeed.map((e) => e.type),
      ['api_key.created'],
      'a tenant sees its own events only',
    );
    const items = await ctx().request(
      'GET',
      `/api/v1/items/${(await ctx().request('GET', '/api/v1/items', { as: t })).body.items[0].id}/events`,
      { as: t },
    );
    assert.deepEqual(
      items.body.items.map((e: any) => e.type),
      ['item.created'],
    );
    assert.equal(
      (await ctx().request('GET', `/api/v1/buyers/${f.buyerId}/events`, { as: t })).body.items[0].type,
      'buyer.created',
    );

    // At the end: nothing yet. Past it: a sequence this feed never reached (another business's, a
    // restored database's), refused, as an empty page would let the reader skip every event up to it.
    const newest = await latest(ctx(), t);
    const end = await ctx().request('GET', `/api/v1/events?after=${newest}`, { as: t });
    assert.deepEqual(end.body, { items: [], lastSequence: newest, hasMore: false });
    for (const wait of [0, 1]) {
      const beyond = await ctx().request('GET', `/api/v1/events?after=${newest + 50}&wait=${wait}`, { as: t });
      assert.equal(beyond.status, 409);
      assert.equal(beyond.body.errorCode, 'CONFLICT');
      assert.equal(
        beyond.body.message,
        `after is ${newest + 50}, past this business's latest event, ${newest}: a sequence of another business or ` +
          'sandbox, or of a database since restored',
      );
    }
  });

  it('answers 410 with the oldest retained sequence for an `after` below it', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), t, f);
    await createOrder(ctx(), t, f);
    const last = await latest(ctx(), t);
    // As retention would leave it: the first events purged.
    await ctx().db.deleteFrom('events').where('business_id', '=', t.businessId).where('sequence', '<=', 2).execute();
    const gone = await ctx().request('GET', '/api/v1/events?after=1', { as: t });
    assert.equal(gone.status, 410);
    assert.equal(gone.body.errorCode, 'GONE');
    assert.match(gone.body.message, /the oldest is 3/);
    const fine = await ctx().request('GET', '/api/v1/events?after=2', { as: t });
    assert.equal(fine.status, 200);
    assert.equal(fine.body.items[0].sequence, 3);
    assert.equal(fine.body.lastSequence, last);
  });

  it('refuses bad feed parameters with 400', async () => {
    const t = await ctx().createTenant();
    for (const query of [
      'limit=0',
      'limit=1001',
      'after=-1',
      'types=order',
      'types=ORDER.created',
      'resourceType=parcel',
      'resourceId=a%20b',
      'wait=x',
    ]) {
      const res = await ctx().request('GET', `/api/v1/events?${query}`, { as: t });
      assert.equal(res.status, 400, query);
    }
  });

  it('refuses an event type that no event has, so a typo is not a feed that stays empty forever', async () => {
    const t = await ctx().createTenant();
    for (const [types, named] of [
      ['orders.created', 'orders.created'],
      ['order.create', 'order.create'],
      ['order.created,parcel.*', 'parcel.*'],
      // An action of another resource's: no item is acknowledged, no price list deleted.
      ['item.acknowledged', 'item.acknowledged'],
      ['order.created,price_list.deleted', 'price_list.deleted'],
    ]) {
      const res = await ctx().request('GET', `/api/v1/events?types=${types}`, { as: t });
      assert.equal(res.status, 400, types);
      assert.match(
        res.body.fieldErrors.types,
        new RegExp(`^Unknown event type ${named.replace('.', '\\.').replace('*', '\\*')}: `),
        types,
      );
    }
    for (const types of [
      'order.created,order.acknowledged',
      'shipment.*',
      'user.password_reset',
      'api_key.revoked',
      'webhook_endpoint.paused,webhook_endpoint.disabled',
    ]) {
      assert.equal((await ctx().request('GET', `/api/v1/events?types=${types}`, { as: t })).status, 200, types);
    }
  });
});

describeEachBackend('the event feed as a long poll', (ctx) => {
  const poll = (t: Tenant, query: string) => {
    const started = performance.now();
    return ctx()
      .request('GET', `/api/v1/events?${query}`, { as: t })
      .then((res) => ({ res, ms: performance.now() - started }));
  };

  it('answers at once when events are there, wakes on a commit, and answers an empty page when the time is up', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const last = await latest(ctx(), t);
    const now = await poll(t, `after=0&wait=5`);
    assert.ok(now.res.body.items.length > 0);
    assert.ok(now.ms < 1000, `${now.ms} ms`);

    // Waiting at the end of the feed: a write wakes it.
    const waiting = poll(t, `after=${last}&wait=10`);
    await new Promise((r) => setTimeout(r, 300));
    const order = await createOrder(ctx(), t, f);
    const woken = await waiting;
    assert.equal(woken.res.status, 200);
    assert.deepEqual(
      woken.res.body.items.map((e: any) => [e.type, e.resourceId]),
      [['order.created', order.id]],
    );
    assert.ok(woken.ms >= 250 && woken.ms < 3000, `${woken.ms} ms`);

    // Nothing comes: an empty page after the wait, at the same place.
    const after = woken.res.body.lastSequence;
    const empty = await poll(t, `after=${after}&wait=1`);
    assert.deepEqual(empty.res.body, { items: [], lastSequence: after, hasMore: false });
    assert.ok(empty.ms >= 950, `${empty.ms} ms`);
  });

  it("keeps waiting through events its filters skip, and through another tenant's writes", async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const o = await createFixture(ctx(), other);
    const order = await createOrder(ctx(), t, f);
    const last = await latest(ctx(), t);
    const waiting = poll(t, `after=${last}&wait=10&types=invoice.*`);
    await new Promise((r) => setTimeout(r, 200));
    await createOrder(ctx(), other, o);
    assert.equal((await patchOrder(ctx(), t, order.id, { order: { notes: 'not an invoice' } })).status, 200);
    await new Promise((r) => setTimeout(r, 200));
    const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: order.id } });
    assert.equal(invoice.status, 201);
    const woken = await waiting;
    assert.deepEqual(
      woken.res.body.items.map((e: any) => e.type),
      ['invoice.created'],
    );
    assert.ok(woken.ms >= 350, `${woken.ms} ms: it did not answer before the invoice`);
  });
});

async function itemOf(c: TestContext, owner: Tenant): Promise<string> {
  const item = await c.request('POST', '/api/v1/items', {
    as: owner,
    body: { item: { name: 'Kept' }, variants: [{ currency: 'AUD', price: 1 }] },
  });
  return item.body.id;
}

async function invoiceOf(c: TestContext, owner: Tenant): Promise<string> {
  const order = await createOrder(c, owner, await createFixture(c, owner));
  return (await c.request('POST', '/api/v1/invoices', { as: owner, body: { orderId: order.id } })).body.id;
}

describeEachBackend('events: credentials and tenants', (ctx) => {
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/events', crossTenant: false });
  securityCases(ctx, {
    method: 'GET',
    url: async (c, owner) => `/api/v1/orders/${(await createOrder(c, owner, await createFixture(c, owner))).id}/events`,
  });
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/items/${await itemOf(c, owner)}/events` });
  securityCases(ctx, {
    method: 'GET',
    url: async (c, owner) => `/api/v1/buyers/${(await createFixture(c, owner)).buyerId}/events`,
  });
  securityCases(ctx, {
    method: 'GET',
    url: async (c, owner) => `/api/v1/invoices/${await invoiceOf(c, owner)}/events`,
  });
});

describeEachBackend('event retention', (ctx) => {
  it('purges events older than the cutoff in batches, and readers below the oldest kept one get 410', async () => {
    const { purgeEventsBefore } = await import('../../src/log/events.ts');
    const t = await ctx().createTenant();
    const quiet = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 4; i++) await createOrder(ctx(), t, f);
    const last = await latest(ctx(), t);
    // The first five events of t, and all of quiet's, are old; so is t's seventh, behind a newer sixth
    // (times need not follow sequences): it stays, so that what is kept has no hole.
    await ctx()
      .db.updateTable('events')
      .set({ occurred_at: '2020-01-01T00:00:00.000Z' })
      .where('business_id', '=', t.businessId)
      .where((eb) => eb.or([eb('sequence', '<=', 5), eb('sequence', '=', 7)]))
      .execute();
    await ctx()
      .db.updateTable('events')
      .set({ occurred_at: '2020-01-01T00:00:00.000Z' })
      .where('business_id', '=', quiet.businessId)
      .execute();
    const purged = await purgeEventsBefore(ctx().db, '2021-01-01T00:00:00.000Z', 2);
    assert.ok(purged >= 6, `${purged} purged`);
    assert.equal(
      await purgeEventsBefore(ctx().db, '2021-01-01T00:00:00.000Z', 2),
      0,
      'nothing more until the sixth expires',
    );
    const left = await ctx()
      .db.selectFrom('events')
      .select('sequence')
      .where('business_id', '=', t.businessId)
      .orderBy('sequence')
      .execute();
    assert.deepEqual(
      left.map((r) => Number(r.sequence)),
      Array.from({ length: last - 5 }, (_, i) => i + 6),
    );

    const gone = await ctx().request('GET', '/api/v1/events?after=4', { as: t });
    assert.equal(gone.status, 410);
    assert.match(gone.body.message, /the oldest is 6/);
    assert.equal((await ctx().request('GET', '/api/v1/events?after=5', { as: t })).body.items[0].sequence, 6);

    // Every event of a quiet business purged: its numbering goes on, and older readers are told.
    const empty = await ctx().request('GET', '/api/v1/events?after=0', { as: quiet });
    assert.equal(empty.status, 410);
    assert.equal(empty.body.message, 'Events up to 1 are no longer retained, and none after it yet; the next is 2');
    assert.deepEqual((await ctx().request('GET', '/api/v1/events?after=1', { as: quiet })).body, {
      items: [],
      lastSequence: 1,
      hasMore: false,
    });
    const exported = await ctx().app.inject({ method: 'GET', url: '/api/v1/items/export', headers: quiet.headers });
    assert.equal(exported.headers['supplyline-event-sequence'], '1');
  });
});
