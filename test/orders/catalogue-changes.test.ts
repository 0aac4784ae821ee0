import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, DELIVERY, getOrder, type OrderFixture } from '../helpers/orders.ts';
import { exported } from '../helpers/export.ts';

/**
 * An order or invoice shows what its latest event says, whatever the catalogue did since: each
 * order line records the variant it sold, each invoice line its description (docs/decisions/0005).
 */
type Op = {
  kind:
    | 'renameVariant'
    | 'deleteVariant'
    | 'renameItem'
    | 'deleteItem'
    | 'addVariant'
    | 'priceList'
    | 'createOrder'
    | 'addLine'
    | 'invoice';
  pick: number;
};

const KINDS = [
  'renameVariant',
  'deleteVariant',
  'renameItem',
  'deleteItem',
  'addVariant',
  'priceList',
  'createOrder',
  'addLine',
  'invoice',
] as const;

interface World {
  t: Tenant;
  f: OrderFixture;
  items: string[];
  orders: string[];
}

/** The variants of live items, with their entries on the default list, as the API lists them. */
async function liveVariants(
  ctx: TestContext,
  w: World,
): Promise<Array<{ itemId: string; variantId: string; entryId: string }>> {
  const lists = (await ctx.request('GET', '/api/v1/pricing?limit=100', { as: w.t })).body.items as Array<{
    isDefault: boolean;
    entries: Array<{ id: string; itemId: string; itemVariantId: string }>;
  }>;
  const list = lists.find((l) => l.isDefault)!;
  return list.entries.map((e) => ({ itemId: e.itemId, variantId: e.itemVariantId, entryId: e.id }));
}

async function apply(ctx: TestContext, w: World, op: Op, n: number): Promise<void> {
  const as = w.t;
  const variants = await liveVariants(ctx, w);
  const variant = variants.length > 0 ? variants[op.pick % variants.length] : undefined;
  const ok = (res: { status: number; body: unknown }, ...expected: number[]) =>
    assert.ok(expected.includes(res.status), `${op.kind}: ${res.status} ${JSON.stringify(res.body)}`);
  switch (op.kind) {
    case 'renameVariant':
      if (variant)
        ok(
          await ctx.request('PATCH', `/api/v1/items/${variant.itemId}`, {
            as,
            body: { updateVariants: [{ id: variant.variantId, variantName: `Renamed ${n}`, sku: `SKU-${n}` }] },
          }),
          200,
        );
      return;
    case 'deleteVariant':
      // The last variant of an item cannot go (400); any other can.
      if (variant)
        ok(
          await ctx.request('PATCH', `/api/v1/items/${variant.itemId}`, {
            as,
            body: { deleteVariants: [variant.variantId] },
          }),
          200,
          400,
        );
      return;
    case 'renameItem':
      if (variant)
        ok(
          await ctx.request('PATCH', `/api/v1/items/${variant.itemId}`, { as, body: { name: `Item renamed ${n}` } }),
          200,
        );
      return;
    case 'deleteItem':
      if (variant && variants.length > 1)
        ok(await ctx.request('DELETE', `/api/v1/items/${variant.itemId}`, { as }), 204);
      return;
    case 'addVariant': {
      const itemId = variant?.itemId ?? w.items[op.pick % w.items.length];
      ok(
        await ctx.request('PATCH', `/api/v1/items/${itemId}`, {
          as,
          body: { createVariants: [{ variantName: `Added ${n}`, currency: 'AUD', price: 3 }] },
        }),
        200,
        404,
      );
      return;
    }
    case 'priceList':
      if (variant) {
        ok(
          await ctx.request('POST', '/api/v1/pricing', {
            as,
            body: {
              itemListData: { label: `List ${n}`, globalPriceFactor: 1.5 },
              entries: [{ itemVariantId: variant.variantId }],
              partnerships: [w.f.partnershipId],
            },
          }),
          201,
        );
      }
      return;
    case 'createOrder':
      if (variant) {
        const res = await ctx.request('POST', `/api/v1/buyers/${w.f.buyerId}/orders`, {
          as,
          body: {
            expectedDeliveryAt: DELIVERY,
            orderItems: [{ itemVariantId: variant.variantId, quantity: 1 + (n % 3) }],
          },
        });
        // A variant missing from the buyer's newest list is not orderable (400).
        ok(res, 201, 400);
        if (res.status === 201) w.orders.push(res.body.id);
      }
      return;
    case 'addLine':
      if (variant && w.orders.length > 0) {
        const id = w.orders[op.pick % w.orders.length];
        // 400 when the order already has a line for this entry.
        ok(
          await ctx.request('PATCH', `/api/v1/orders/${id}`, {
            as,
            body: {
              createOrderItems: [
                {
                  itemListEntryId: variant.entryId,
                  quantity: 2,
                  unitOfMeasure: 'EA',
                  currency: 'AUD',
                  price: 1,
                  cost: 0.5,
                },
              ],
            },
          }),
          200,
          400,
        );
      }
      return;
    case 'invoice':
      if (w.orders.length > 0)
        ok(
          await ctx.request('POST', '/api/v1/invoices', { as, body: { orderId: w.orders[op.pick % w.orders.length] } }),
          201,
          409,
        );
      return;
  }
}

/** The latest event of each resource of `prefix` (order., invoice.), by id. */
async function latestEvents(
  ctx: TestContext,
  t: Tenant,
  prefix: string,
): Promise<Map<string, { type: string; object: { id: string; version: number } }>> {
  const latest = new Map<string, { type: string; object: { id: string; version: number } }>();
  for (let after = 0; ; ) {
    const page = (await ctx.request('GET', `/api/v1/events?after=${after}&limit=1000`, { as: t })).body;
    for (const event of page.items)
      if (event.type.startsWith(prefix))
        latest.set(event.data.object.id, { type: event.type, object: event.data.object });
    if (page.items.length === 0) break;
    after = page.lastSequence;
  }
  return latest;
}

describeEachBackend('catalogue changes and the orders that sold it', (ctx) => {
  it('leaves every order and invoice as its latest event shows it, through any catalogue writes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ kind: fc.constantFrom(...KINDS), pick: fc.nat(50) }), { minLength: 3, maxLength: 14 }),
        async (ops) => {
          const t = await ctx().createTenant();
          const f = await createFixture(ctx(), t);
          const second = await ctx().request('POST', '/api/v1/items', {
            as: t,
            body: {
              item: { name: 'Second' },
              variants: [
                { variantName: 'One', sku: 'S-1', currency: 'AUD', price: 4 },
                { variantName: 'Two', currency: 'AUD', price: 5 },
              ],
            },
          });
          const firstItem = (
            await getOrder(
              ctx(),
              t,
              (
                await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
                  as: t,
                  body: {
                    expectedDeliveryAt: DELIVERY,
                    orderItems: [
                      { itemVariantId: f.variantIds[0], quantity: 1 },
                      { itemVariantId: f.variantIds[1], quantity: 2 },
                    ],
                  },
                })
              ).body.id,
            )
          ).body;
          const w: World = {
            t,
            f,
            items: [firstItem.orderItems[0].itemListEntry.itemVariant.itemId, second.body.id],
            orders: [firstItem.id],
          };
          for (const [n, op] of ops.entries()) await apply(ctx(), w, op, n);

          const orderEvents = await latestEvents(ctx(), t, 'order.');
          for (const id of w.orders) {
            const res = await getOrder(ctx(), t, id);
            assert.equal(res.status, 200);
            assert.deepEqual(res.body, orderEvents.get(id)!.object, 'GET equals the latest event');
            assert.equal(res.headers.etag, `"${res.body.version}"`);
          }
          const listed = (await ctx().request('GET', '/api/v1/orders?limit=100', { as: t })).body.items;
          for (const order of listed)
            assert.deepEqual(order, orderEvents.get(order.id)!.object, 'a list shows the latest event');
          const { records } = await exported(ctx(), t, 'orders');
          assert.deepEqual(
            records,
            listed.slice().sort((a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1)),
          );

          const invoiceEvents = await latestEvents(ctx(), t, 'invoice.');
          for (const [id, { object }] of invoiceEvents) {
            assert.deepEqual((await ctx().request('GET', `/api/v1/invoices/${id}`, { as: t })).body, object);
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('keeps the name and SKU a line was sold under, and a new line takes the variant as it is now', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const before = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1 }] },
    });
    const itemId = before.body.orderItems[0].itemListEntry.itemVariant.itemId;
    // Rendered and cached before the change.
    await getOrder(ctx(), t, before.body.id);
    await ctx().request('GET', '/api/v1/orders', { as: t });

    const renamed = await ctx().request('PATCH', `/api/v1/items/${itemId}`, {
      as: t,
      body: { updateVariants: [{ id: f.variantIds[0], variantName: 'Petite', sku: 'W-P' }] },
    });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    const after = await ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
      as: t,
      body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1 }] },
    });

    const variantOf = (order: {
      orderItems: Array<{ itemListEntry: { itemVariant: { variantName: string; sku: string | null } } }>;
    }) => [
      order.orderItems[0].itemListEntry.itemVariant.variantName,
      order.orderItems[0].itemListEntry.itemVariant.sku,
    ];
    const old = await getOrder(ctx(), t, before.body.id);
    assert.deepEqual(variantOf(old.body), ['Small', 'W-S']);
    assert.equal(old.headers.etag, '"1"');
    assert.deepEqual(variantOf((await getOrder(ctx(), t, after.body.id)).body), ['Petite', 'W-P']);
    const listed = new Map(
      (await ctx().request('GET', '/api/v1/orders', { as: t })).body.items.map((o: { id: string }) => [o.id, o]),
    );
    assert.deepEqual(variantOf(listed.get(before.body.id) as never), ['Small', 'W-S']);
    assert.deepEqual(variantOf(listed.get(after.body.id) as never), ['Petite', 'W-P']);

    // Deleting the item leaves both orders as they were.
    assert.equal((await ctx().request('DELETE', `/api/v1/items/${itemId}`, { as: t })).status, 204);
    assert.deepEqual((await getOrder(ctx(), t, before.body.id)).body, old.body);
  });
});
