import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { listLatestEvents } from '../../src/events/repository.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

/** Every page of the feed from `after` with `query`, walked by lastSequence: the events, and where the walk ended. */
async function walk(ctx: TestContext, t: Tenant, query: string, after: number, limit: number) {
  const events: any[] = [];
  for (let pages = 0; pages < 1000; pages++) {
    const res = await ctx.request('GET', `/api/v1/events?after=${after}&limit=${limit}${query}`, { as: t });
    if (res.status !== 200) return { status: res.status, body: res.body, events, lastSequence: after };
    assert.ok(res.body.lastSequence >= after, 'lastSequence never moves back');
    events.push(...res.body.items);
    after = res.body.lastSequence;
    if (!res.body.hasMore) return { status: 200, events, lastSequence: after };
  }
  throw new Error('the walk did not end');
}

/** What a filter keeps, as a reader would apply it by hand to the whole feed. */
function keeps(filter: { types?: string[]; resourceType?: string; resourceId?: string }, e: any): boolean {
  if (filter.types && !filter.types.some((t) => (t.endsWith('.*') ? e.type.startsWith(t.slice(0, -1)) : e.type === t)))
    return false;
  if (filter.resourceType && e.resourceType !== filter.resourceType) return false;
  if (filter.resourceId && e.resourceId !== filter.resourceId) return false;
  return true;
}

const query = (filter: { types?: string[]; resourceType?: string; resourceId?: string }) =>
  (filter.types ? `&types=${filter.types.join(',')}` : '') +
  (filter.resourceType ? `&resourceType=${filter.resourceType}` : '') +
  (filter.resourceId ? `&resourceId=${filter.resourceId}` : '');

/**
 * Issue 51's guard: a filtered read (types with wildcards, resourceType, resourceId, and together)
 * returns exactly what the unfiltered feed filtered by hand returns, from any place and at any page
 * size, for deleted resources too, and says 410 exactly where the unfiltered read does.
 */
describeEachBackend("the event feed's filters", (ctx) => {
  it('return exactly the unfiltered feed filtered by hand, from any place, at any page size, and at the retention edge', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const orders = [];
    for (let i = 0; i < 4; i++) orders.push(await createOrder(ctx(), t, f));
    assert.equal(
      (await ctx().request('PATCH', `/api/v1/orders/${orders[0].id}`, { as: t, body: { order: { notes: 'changed' } } }))
        .status,
      200,
    );
    const invoice = await ctx().request('POST', '/api/v1/invoices', {
      as: t,
      body: { orderId: orders[1].id, reference: 'INV-1' },
    });
    assert.equal(invoice.status, 201, JSON.stringify(invoice.body));
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${orders[2].id}`, { as: t })).status, 204);
    const item = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Short-lived' }, variants: [{ variantName: 'a', currency: 'AUD', price: 1 }] },
    });
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${item.body.id}`, { as: t })).status, 204);
    assert.equal(
      (await ctx().request('PATCH', `/api/v1/buyers/${f.buyerId}`, { as: t, body: { buyer: { name: 'Renamed' } } }))
        .status,
      200,
    );

    const all = (await walk(ctx(), t, '', 0, 1000)).events;
    const last = all.at(-1).sequence;
    const types = [...new Set(all.map((e) => e.type))];
    const ids = [...new Set(all.map((e) => e.resourceId))];
    const filter = fc.record({
      types: fc.option(
        fc.uniqueArray(
          fc.oneof(
            fc.constantFrom(...types),
            fc.constantFrom(...types.map((x) => `${x.split('.')[0]}.*`)),
            // A type there is, of which this business has no event.
            fc.constant('user.password_reset'),
          ),
          { minLength: 1, maxLength: 3 },
        ),
        { nil: undefined },
      ),
      resourceType: fc.option(fc.constantFrom('order', 'item', 'buyer', 'invoice', 'price_list', 'api_key'), {
        nil: undefined,
      }),
      resourceId: fc.option(fc.constantFrom(...ids, orders[2].id, item.body.id), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(
        filter,
        fc.integer({ min: 0, max: last + 2 }),
        fc.integer({ min: 1, max: 7 }),
        async (chosen, after, limit) => {
          const read = await walk(ctx(), t, query(chosen), after, limit);
          // Past the feed's latest event: refused, not an empty page that moves the reader there.
          if (after > last) return void assert.equal(read.status, 409, JSON.stringify({ chosen, after }));
          assert.equal(read.status, 200);
          assert.deepEqual(
            read.events.map((e) => e.sequence),
            all.filter((e) => e.sequence > after && keeps(chosen, e)).map((e) => e.sequence),
            JSON.stringify({ chosen, after, limit }),
          );
          // The walk ends where the feed does (or where the reader already is): nothing left to skip again.
          assert.equal(read.lastSequence, Math.max(after, last));
          // The console's newest-first read takes the same events.
          const latest = await listLatestEvents(ctx().db, t.businessId, { ...chosen, limit });
          assert.deepEqual(
            latest.map((e) => e.sequence),
            all
              .filter((e) => keeps(chosen, e))
              .map((e) => e.sequence)
              .reverse()
              .slice(0, limit),
          );
        },
      ),
      { numRuns: 40 },
    );

    // A deleted resource's events, its delete included.
    const deleted = await walk(ctx(), t, query({ resourceId: orders[2].id }), 0, 2);
    assert.deepEqual(
      deleted.events.map((e) => e.type),
      ['order.created', 'order.deleted'],
    );

    // The retention edge: with the first events purged, a filtered read below the oldest kept one is
    // 410 as the unfiltered one is, and from the edge on returns the kept events filtered by hand.
    await ctx().db.deleteFrom('events').where('business_id', '=', t.businessId).where('sequence', '<=', 3).execute();
    for (const chosen of [{ types: ['order.*'] }, { resourceType: 'buyer' }, { resourceId: orders[0].id }, {}]) {
      const gone = await ctx().request('GET', `/api/v1/events?after=2${query(chosen)}`, { as: t });
      assert.equal(gone.status, 410, JSON.stringify(chosen));
      assert.match(gone.body.message, /the oldest is 4/);
      const kept = await walk(ctx(), t, query(chosen), 3, 3);
      assert.deepEqual(
        kept.events.map((e) => e.sequence),
        all.filter((e) => e.sequence > 3 && keeps(chosen, e)).map((e) => e.sequence),
      );
    }
  });
});
