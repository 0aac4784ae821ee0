import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';
import { securityCases } from '../helpers/security.ts';
import { exported } from '../helpers/export.ts';

async function feedAfter(ctx: TestContext, t: Tenant, after: number) {
  const res = await ctx.request('GET', `/api/v1/events?after=${after}&limit=1000`, { as: t });
  assert.equal(res.status, 200);
  return res.body.items as any[];
}

describeEachBackend('snapshot export', (ctx) => {
  for (const path of ['orders', 'items', 'buyers', 'invoices']) {
    securityCases(ctx, { method: 'GET', url: () => `/api/v1/${path}/export`, crossTenant: false });
  }

  it('streams every live record as its GET shows it, and the export plus the feed after its sequence is the live state', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    await createOrder(ctx(), other, await createFixture(ctx(), other));
    const orders = [];
    for (let i = 0; i < 7; i++) orders.push(await createOrder(ctx(), t, f, { notes: `n${i}` }));
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[6].id}`, { as: t })).status, 204);
    const invoice = await ctx().request('POST', '/api/v1/invoices', { as: t, body: { orderId: orders[0].id } });
    assert.equal(invoice.status, 201);

    const snapshot = await exported(ctx(), t, 'orders');
    assert.deepEqual(
      snapshot.records.map((o) => o.id),
      orders
        .slice(0, 6)
        .map((o) => o.id)
        .sort(),
      'live orders only, in id order, this tenant only',
    );
    for (const record of snapshot.records) {
      assert.deepEqual(record, (await ctx().request('GET', `/api/v1/orders/${record.id}`, { as: t })).body);
    }
    const all = await feedAfter(ctx(), t, 0);
    assert.equal(snapshot.sequence, all.at(-1).sequence, 'the sequence of the last event before the export');

    // Changes after the export: the feed from its sequence brings a copy up to date.
    assert.equal((await patchOrder(ctx(), t, orders[1].id, { order: { phase: 'ACTIVE' } })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[2].id}`, { as: t })).status, 204);
    const late = await createOrder(ctx(), t, f, { notes: 'after the export' });
    const copy = new Map(snapshot.records.map((o) => [o.id, o]));
    for (const event of await feedAfter(ctx(), t, snapshot.sequence)) {
      if (event.resourceType !== 'order') continue;
      if (event.type === 'order.deleted') copy.delete(event.resourceId);
      else copy.set(event.resourceId, event.data.object);
    }
    const live = (await ctx().request('GET', '/api/v1/orders?limit=100', { as: t })).body.items;
    assert.deepEqual(
      [...copy.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
      [...live].sort((a: any, b: any) => (a.id < b.id ? -1 : 1)),
    );
    assert.ok(copy.has(late.id) && !copy.has(orders[2].id));

    const [items, buyers, invoices] = [
      await exported(ctx(), t, 'items'),
      await exported(ctx(), t, 'buyers'),
      await exported(ctx(), t, 'invoices'),
    ];
    assert.deepEqual(items.records, [
      (await ctx().request('GET', `/api/v1/items/${items.records[0].id}`, { as: t })).body,
    ]);
    assert.deepEqual(buyers.records, [(await ctx().request('GET', `/api/v1/buyers/${f.buyerId}`, { as: t })).body]);
    assert.deepEqual(invoices.records, [invoice.body]);
    const empty = await exported(ctx(), other, 'invoices');
    assert.deepEqual(empty.records, []);
  });

  it('reads one snapshot: writes committed while it is open are not in it, and come after its sequence', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 3; i++) await createOrder(ctx(), t, f);
    const snapshot = await ctx().database.handle.openSnapshot();
    try {
      const { lastSequence } = await import('../../src/log/events.ts');
      const { exportOrders } = await import('../../src/orders/export-repository.ts');
      const sequence = await lastSequence(snapshot.db, t.businessId);
      const written = await createOrder(ctx(), t, f);
      assert.equal((await patchOrder(ctx(), t, written.id, { order: { notes: 'later still' } })).status, 200);
      const seen = await exportOrders(snapshot.db, t.businessId, '', 100);
      assert.equal(seen.length, 3);
      assert.ok(!seen.some((o) => o.id === written.id));
      assert.equal(await lastSequence(snapshot.db, t.businessId), sequence, 'the snapshot does not move');
      const after = await feedAfter(ctx(), t, sequence);
      assert.deepEqual(
        after.map((e) => [e.type, e.resourceId]),
        [
          ['order.created', written.id],
          ['order.updated', written.id],
        ],
      );
    } finally {
      await snapshot.release();
    }
  });

  it("reads each order's items in line order, with the variants they recorded, page after page", async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const [small, large, tiny] = f.variantIds;
    const lines = (ids: string[]) => ids.map((itemVariantId, i) => ({ itemVariantId, quantity: i + 1 }));
    const orders = [
      await createOrder(ctx(), t, f, { orderItems: lines([tiny, small, large]) }),
      await createOrder(ctx(), t, f, {
        orderItems: lines([large, tiny]),
        notes: 'Café — 東京 🚚, "quoted"\nnext line',
        externalReference: 'PO-77',
      }),
      await createOrder(ctx(), t, f, { orderItems: lines([small]) }),
      await createOrder(ctx(), t, f, { orderItems: lines([large, small, tiny]) }),
    ];
    // Line numbers that no longer follow the items' ids or entries: one deleted, one added after it.
    const patched = await patchOrder(ctx(), t, orders[3].id, {
      deleteOrderItems: [orders[3].orderItems[0].id],
      createOrderItems: [
        { itemListEntryId: f.entryIds[1], quantity: 9, unitOfMeasure: 'EA', currency: 'AUD', price: 2.5, cost: 1 },
      ],
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const itemId = (await ctx().request('GET', `/api/v1/orders/${orders[0].id}`, { as: t })).body.orderItems[0]
      .itemListEntry.itemVariant.itemId;
    const gets = async () =>
      new Map(
        await Promise.all(
          orders.map(
            async (o) =>
              [o.id, JSON.stringify((await ctx().request('GET', `/api/v1/orders/${o.id}`, { as: t })).body)] as const,
          ),
        ),
      );
    const { exportOrders } = await import('../../src/orders/export-repository.ts');

    for (const name of ['Small', 'Renamed between exports']) {
      if (name !== 'Small') {
        const renamed = await ctx().request('PATCH', `/api/v1/items/${itemId}`, {
          as: t,
          body: { updateVariants: [{ id: small, variantName: name, sku: 'W-S2' }] },
        });
        assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      }
      const expected = await gets();
      // The lines keep the name they were sold under.
      assert.ok([...expected.values()].some((text) => text.includes('"variantName":"Small"')));
      assert.ok(![...expected.values()].some((text) => text.includes('Renamed')));
      // Two orders a page; key for key as GET writes them.
      const seen: string[] = [];
      const snapshot = await ctx().database.handle.openSnapshot();
      try {
        for (let after = ''; ; ) {
          const page = await exportOrders(snapshot.db, t.businessId, after, 2);
          if (page.length === 0) break;
          for (const o of page) seen.push(JSON.stringify(o));
          after = page.at(-1)!.id;
        }
      } finally {
        await snapshot.release();
      }
      assert.deepEqual(
        seen,
        [...expected.keys()].sort().map((id) => expected.get(id)),
      );
      const streamed = await exported(ctx(), t, 'orders');
      assert.deepEqual(
        streamed.records.map((o) => JSON.stringify(o)),
        seen,
      );
    }
  });

  it('gives the event loop a turn between its batches, so the server goes on answering while an export streams', async () => {
    // On SQLite every read of a batch resolves at once; a fast client never pushes back. Without a
    // turn between batches, one export held every other request of the process until it ended.
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 6; i++) await createOrder(ctx(), t, f);
    const { streamTuning } = await import('../../src/http/export.ts');
    const batch = streamTuning.batch;
    streamTuning.batch = 1;
    let turns = 0;
    let streaming = true;
    const turn = () => {
      if (!streaming) return;
      turns++;
      setImmediate(turn);
    };
    try {
      setImmediate(turn);
      const { records } = await exported(ctx(), t, 'orders');
      assert.equal(records.length, 6);
    } finally {
      streaming = false;
      streamTuning.batch = batch;
    }
    assert.ok(turns >= 6, `the event loop turned ${turns} times while 6 batches streamed`);
  });

  it("lets an abandoned export's last read finish before its snapshot is released", async () => {
    // The next batch is read while one is written out; a client that leaves mid-export must not
    // have the snapshot's connection released under a read still running on it.
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    for (let i = 0; i < 4; i++) await createOrder(ctx(), t, f);
    const { streamTuning } = await import('../../src/http/export.ts');
    const { snapshotsOf } = await import('../../src/db/connection.ts');
    const { createApp } = await import('../../src/app.ts');
    let running = 0;
    const releases: number[] = [];
    // Every read of the snapshot answers 100 ms late, so the client leaves while one is running.
    const slow = {
      transformQuery: (args: { node: any }) => {
        running++;
        return args.node;
      },
      transformResult: async (args: { result: any }) => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        running--;
        return args.result;
      },
    };
    const app = await createApp({
      db: ctx().db,
      config: ctx().config,
      rateLimiter: null,
      openSnapshot: async () => {
        const snapshot = await snapshotsOf(ctx().db)();
        return {
          db: snapshot.db.withPlugin(slow),
          release: () => {
            releases.push(running);
            return snapshot.release();
          },
        };
      },
    });
    const batch = streamTuning.batch;
    streamTuning.batch = 1;
    try {
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const aborted = new AbortController();
      const res = await fetch(`${base}/api/v1/orders/export`, { headers: t.headers, signal: aborted.signal });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      assert.ok((await reader.read()).value!.length > 0);
      aborted.abort();
      for (let i = 0; i < 100 && releases.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(releases, [0], 'released once, with no read running on it');
    } finally {
      streamTuning.batch = batch;
      // The aborted fetch's connection would otherwise hold close() for the keep-alive timeout.
      app.server.closeAllConnections();
      await app.close();
    }
  });
});
