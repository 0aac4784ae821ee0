import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, DELIVERY, type OrderFixture } from '../helpers/orders.ts';
import { testListTuning } from '../helpers/orders.ts';

/** Every list with page, limit and total: its path, and how to add one record to it. */
const LISTS: Array<{
  path: string;
  create: (ctx: TestContext, t: Tenant, f: OrderFixture, n: number) => Promise<string>;
}> = [
  {
    path: 'orders',
    create: async (ctx, t, f, n) =>
      created(await ctx.request('POST', `/api/v1/buyers/${f.buyerId}/orders`, { as: t, body: orderBody(f, n) })),
  },
  {
    path: 'items',
    create: async (ctx, t, _f, n) =>
      created(
        await ctx.request('POST', '/api/v1/items', {
          as: t,
          body: { item: { name: `Item ${n}` }, variants: [{ currency: 'AUD', price: 1 }] },
        }),
      ),
  },
  {
    path: 'buyers',
    create: async (ctx, t, _f, n) =>
      created(await ctx.request('POST', '/api/v1/buyers', { as: t, body: { buyer: { name: `Buyer ${n}` } } })),
  },
  {
    path: 'pricing',
    create: async (ctx, t, _f, n) =>
      created(await ctx.request('POST', '/api/v1/pricing', { as: t, body: { itemListData: { label: `List ${n}` } } })),
  },
  {
    path: 'invoices',
    create: async (ctx, t, f, n) => {
      const order = created(
        await ctx.request('POST', `/api/v1/buyers/${f.buyerId}/orders`, { as: t, body: orderBody(f, n) }),
      );
      return created(await ctx.request('POST', '/api/v1/invoices', { as: t, body: { orderId: order } }));
    },
  },
  {
    path: 'webhook-endpoints',
    create: async (ctx, t, _f, n) =>
      created(
        await ctx.request('POST', '/api/v1/webhook-endpoints', {
          as: t,
          body: { url: `https://hooks.example.com/${n}` },
        }),
      ),
  },
];

const orderBody = (f: OrderFixture, n: number) => ({
  expectedDeliveryAt: DELIVERY,
  orderItems: [{ itemVariantId: f.variantIds[n % 3], quantity: 1 }],
  properties: { erp: { parity: n % 2 === 0 ? 'even' : 'odd' } },
});

function created(res: { status: number; body: { id: string } }): string {
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** Every page of a list from its first, by cursor; between pages `between` runs (writes, say). */
async function walk(
  ctx: TestContext,
  t: Tenant,
  path: string,
  query: string,
  between: (page: number) => Promise<void> = async () => {},
) {
  const pages: Array<{ ids: string[]; page: number; total: number }> = [];
  let cursor: string | null = null;
  do {
    const url: string = `/api/v1/${path}?${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res: { status: number; body: any } = await ctx.request('GET', url, { as: t });
    assert.equal(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
    pages.push({ ids: res.body.items.map((r: { id: string }) => r.id), page: res.body.page, total: res.body.total });
    cursor = res.body.nextCursor;
    await between(pages.length);
  } while (cursor !== null);
  return pages;
}

describeEachBackend('cursor pages', (ctx) => {
  for (const list of LISTS) {
    it(`walks ${list.path} by cursor: every record once, in list order, with page numbers, ending with null`, async () => {
      const t = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      for (let n = 0; n < 7; n++) await list.create(ctx(), t, f, n);
      const all = await ctx().request('GET', `/api/v1/${list.path}?limit=100`, { as: t });
      assert.equal(all.body.nextCursor, null, 'one page holds the whole list');
      const pages = await walk(ctx(), t, list.path, 'limit=3');
      assert.deepEqual(
        pages.flatMap((p) => p.ids),
        all.body.items.map((r: { id: string }) => r.id),
      );
      assert.deepEqual(
        pages.map((p) => p.page),
        pages.map((_, i) => i + 1),
      );
      assert.ok(pages.every((p) => p.total === all.body.total));

      // A page by number gives a cursor too, which continues with the next page's number.
      const second = await ctx().request('GET', `/api/v1/${list.path}?limit=2&page=2`, { as: t });
      const third = await ctx().request(
        'GET',
        `/api/v1/${list.path}?limit=2&cursor=${encodeURIComponent(second.body.nextCursor)}`,
        { as: t },
      );
      const byNumber = await ctx().request('GET', `/api/v1/${list.path}?limit=2&page=3`, { as: t });
      assert.equal(third.body.page, 3);
      assert.deepEqual(third.body.items, byNumber.body.items);
      // The last page by number has none.
      const last = await ctx().request('GET', `/api/v1/${list.path}?limit=100`, { as: t });
      assert.equal(last.body.nextCursor, null);
    });
  }

  it("refuses a forged, altered or foreign cursor, another list's, other filters', and page with cursor (400)", async () => {
    const [t, other] = [await ctx().createTenant(), await ctx().createTenant()];
    const [f, g] = [await createFixture(ctx(), t), await createFixture(ctx(), other)];
    for (let n = 0; n < 3; n++) {
      await LISTS[0].create(ctx(), t, f, n);
      await LISTS[0].create(ctx(), other, g, n);
    }
    const first = await ctx().request('GET', '/api/v1/orders?limit=1&phase=PENDING', { as: t });
    const cursor: string = first.body.nextCursor;
    assert.equal(typeof cursor, 'string');
    const get = (as: Tenant, url: string) => ctx().request('GET', url, { as });
    const refused = async (as: Tenant, url: string, message: RegExp) => {
      const res = await get(as, url);
      assert.equal(res.status, 400, `${url}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.fieldErrors.cursor, message);
    };
    const c = encodeURIComponent(cursor);
    assert.equal((await get(t, `/api/v1/orders?limit=1&phase=PENDING&cursor=${c}`)).status, 200);
    const flipped = cursor.slice(0, -3) + (cursor.at(-3) === 'A' ? 'B' : 'A') + cursor.slice(-2);
    await refused(
      t,
      `/api/v1/orders?limit=1&phase=PENDING&cursor=${encodeURIComponent(flipped)}`,
      /Not a cursor of this list/,
    );
    await refused(t, '/api/v1/orders?limit=1&phase=PENDING&cursor=abc', /Not a cursor of this list/);
    await refused(
      t,
      `/api/v1/orders?limit=1&phase=PENDING&cursor=${encodeURIComponent(Buffer.from('{"l":"orders"}').toString('base64url'))}`,
      /Not a cursor of this list/,
    );
    await refused(other, `/api/v1/orders?limit=1&phase=PENDING&cursor=${c}`, /Not a cursor of this list/);
    await refused(t, `/api/v1/items?limit=1&cursor=${c}`, /Not a cursor of this list/);
    await refused(t, `/api/v1/orders?limit=1&cursor=${c}`, /other filters/);
    await refused(t, `/api/v1/orders?limit=1&phase=ACTIVE&cursor=${c}`, /other filters/);
    await refused(t, `/api/v1/orders?limit=1&phase=PENDING&page=2&cursor=${c}`, /page and cursor/);
    // The limit may change along a walk.
    assert.equal((await get(t, `/api/v1/orders?limit=5&phase=PENDING&cursor=${c}`)).body.items.length, 2);
  });

  it('walks orders by cursor under creates, updates and deletes: every order that stays matched, once', async () => {
    const filters = [
      '',
      'status=UNASSIGNED',
      'propertyPath=erp.parity&propertyValue=even',
      'propertyPath=erp.parity',
      'updatedSince=2000-01-01T00:00:00.000Z',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...filters),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        fc.array(fc.record({ kind: fc.constantFrom('create', 'update', 'delete', 'restatus'), pick: fc.nat(100) }), {
          minLength: 1,
          maxLength: 12,
        }),
        async (filter, limit, fewCandidates, writes) => {
          const t = await ctx().createTenant();
          const f = await createFixture(ctx(), t);
          const ids: string[] = [];
          for (let n = 0; n < 14; n++) ids.push(await LISTS[0].create(ctx(), t, f, n));
          const query = `limit=${limit}${filter ? `&${filter}` : ''}`;
          const before = new Set<string>(
            (
              await ctx().request('GET', `/api/v1/orders?${query.replace(/limit=\d+/, 'limit=100')}`, { as: t })
            ).body.items.map((o: { id: string }) => o.id),
          );
          const touched = new Set<string>();
          let w = 0;
          const tuning = { ...testListTuning };
          // Both page plans for a property value: collected from the side table, or the sorted walk.
          testListTuning.fewCandidates = fewCandidates ? 5_000 : 0;
          try {
            const pages = await walk(ctx(), t, 'orders', query, async () => {
              const write = writes[w++];
              if (!write) return;
              const id = ids[write.pick % ids.length];
              if (write.kind === 'create') ids.push(await LISTS[0].create(ctx(), t, f, 100 + w));
              else {
                touched.add(id);
                const res =
                  write.kind === 'delete'
                    ? await ctx().request('DELETE', `/api/v1/orders/${id}`, { as: t })
                    : await ctx().request('PATCH', `/api/v1/orders/${id}`, {
                        as: t,
                        body: { order: write.kind === 'update' ? { notes: `w${w}` } : { status: 'ACCEPTED' } },
                      });
                assert.ok([200, 204, 404].includes(res.status), JSON.stringify(res.body));
              }
            });
            const seen = pages.flatMap((p) => p.ids);
            assert.equal(new Set(seen).size, seen.length, `no order twice: ${query}`);
            const after = new Set<string>(
              (
                await ctx().request('GET', `/api/v1/orders?${query.replace(/limit=\d+/, 'limit=100')}`, { as: t })
              ).body.items.map((o: { id: string }) => o.id),
            );
            for (const id of before) {
              // Matched throughout: before and after, and not written meanwhile (a status change or delete can take it out).
              if (after.has(id) && !touched.has(id)) assert.ok(seen.includes(id), `${id} missed: ${query}`);
            }
            for (const id of seen)
              assert.ok(before.has(id) || after.has(id) || touched.has(id), `${id} never matched: ${query}`);
          } finally {
            Object.assign(testListTuning, tuning);
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('walks items by cursor while items are created and deleted: every item that stays, once', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const ids: string[] = [];
    for (let n = 0; n < 10; n++) ids.push(await LISTS[1].create(ctx(), t, f, n));
    const deleted = new Set<string>();
    const pages = await walk(ctx(), t, 'items', 'limit=3', async (page) => {
      await LISTS[1].create(ctx(), t, f, 100 + page);
      const victim = ids[ids.length - 1 - page * 2];
      if (victim) {
        deleted.add(victim);
        assert.equal((await ctx().request('DELETE', `/api/v1/items/${victim}`, { as: t })).status, 204);
      }
    });
    const seen = pages.flatMap((p) => p.ids);
    assert.equal(new Set(seen).size, seen.length);
    for (const id of ids) if (!deleted.has(id)) assert.ok(seen.includes(id), `${id} missed`);
    // The fixture's item is in the list too.
    assert.ok(seen.length >= ids.length - deleted.size);
  });
});
