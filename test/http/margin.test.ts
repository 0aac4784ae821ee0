import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { AREAS, type Scope } from '../../src/businesses/scopes.ts';
import { marginFieldIn, withoutMargin } from '../../src/businesses/margin.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { importNow } from '../helpers/imports.ts';

/** Every area's write scope: a key that may do everything but see the margin. */
const EVERY_AREA: Scope[] = AREAS.map((a) => `${a}:write` as Scope);

/** Every margin field's path in a JSON value (outside properties), for the messages. */
function marginPaths(value: unknown, path = '', out: string[] = []): string[] {
  if (Array.isArray(value))
    value.forEach((v, i) => {
      marginPaths(v, `${path}${i}.`, out);
    });
  else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === 'cost' || key === 'globalCostFactor') out.push(`${path}${key}`);
      else if (key !== 'properties' && key !== 'buyerInfo' && !key.startsWith('properties.'))
        marginPaths(child, `${path}${key}.`, out);
    }
  }
  return out;
}

const parse = (_status: number, text: unknown): unknown[] =>
  typeof text === 'string'
    ? text
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l))
    : [text];

it('leaves out margin fields by name, but never the keys of properties or buyerInfo', () => {
  const body = {
    cost: 1,
    globalCostFactor: 2,
    properties: { cost: 3 },
    buyerInfo: { cost: 4 },
    variants: [{ cost: 5, price: 6, properties: { globalCostFactor: 7 } }],
    changes: {
      'properties.erp.cost': { from: 1, to: 2 },
      cost: { from: '1', to: '2' },
      orderItems: { updated: [{ id: 'x', changes: { cost: { to: 1 } } }] },
    },
  };
  assert.deepEqual(withoutMargin(body), {
    properties: { cost: 3 },
    buyerInfo: { cost: 4 },
    variants: [{ price: 6, properties: { globalCostFactor: 7 } }],
    changes: { 'properties.erp.cost': { from: 1, to: 2 }, orderItems: { updated: [{ id: 'x', changes: {} }] } },
  });
  assert.equal(marginFieldIn({ properties: { cost: 1 }, variants: [{ price: 1 }, { cost: 2 }] }), 'variants.1.cost');
  assert.equal(marginFieldIn({ properties: { cost: 1 }, buyerInfo: { globalCostFactor: 1 } }), undefined);
});

/**
 * A key without margin:read finds no cost anywhere (issue 46): every GET of the API document,
 * generated from the route table, every export, the feed, every history, an idempotent replay and
 * the deliveries to a webhook endpoint it set up. A key with margin:read sees the same answers with
 * their cost, so each check could fail.
 */
describeEachBackend(
  'the margin scopes',
  (ctx) => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => receiver.close());

    /** One of everything, with costs, made by a key that may do everything. */
    async function business(c: TestContext) {
      const owner = await c.createTenant();
      const fixture = await createFixture(c, owner);
      const list = await c.request('POST', '/api/v1/pricing', {
        as: owner,
        body: {
          itemListData: { label: 'Trade', globalCostFactor: 1.2 },
          entries: [{ itemVariantId: fixture.variantIds[0] }],
          partnerships: [fixture.partnershipId],
        },
      });
      assert.equal(list.status, 201, JSON.stringify(list.body));
      const order = await createOrder(c, owner, fixture, { properties: { erp: { cost: 'kept: a property is data' } } });
      const itemId = (await c.request('GET', `/api/v1/items?limit=1`, { as: owner })).body.items[0].id;
      // A change of cost, so that events' changes hold one.
      const patched = await c.request('PATCH', `/api/v1/items/${itemId}`, {
        as: owner,
        body: { updateVariants: [{ id: fixture.variantIds[0], cost: 5 }] },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const invoice = await c.request('POST', '/api/v1/invoices', { as: owner, body: { orderId: order.id } });
      assert.equal(invoice.status, 201, JSON.stringify(invoice.body));
      const endpoint = await c.request('POST', '/api/v1/webhook-endpoints', {
        as: owner,
        body: { url: 'https://example.com/hook' },
      });
      const imported = await importNow(c, owner, [
        { op: 'patch', resource: 'item', id: itemId, data: { description: 'Imported' } },
      ]);
      const ids: Record<string, string> = {
        items: itemId,
        orders: order.id,
        buyers: fixture.buyerId,
        pricing: list.body.id,
        invoices: invoice.body.id,
        'webhook-endpoints': endpoint.body.id,
        imports: imported.id,
        shipments: (
          await c.request('POST', `/api/v1/orders/${order.id}/shipments`, {
            as: owner,
            body: { lines: [{ orderItemId: order.orderItems[0].id, quantity: 1 }] },
          })
        ).body.id,
      };
      return { owner, fixture, ids };
    }

    it('shows a key without margin:read no cost in any GET, export, feed page or history; a key with it sees them', async () => {
      const { owner, ids } = await business(ctx());
      const hidden = await ctx().addKey(owner, [...EVERY_AREA]);
      const shown = await ctx().addKey(owner, [...EVERY_AREA, 'margin:read']);
      const doc = (await ctx().request('GET', '/openapi.json')).body;
      const seenWithMargin: string[] = [];
      let reads = 0;
      for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
        if (!path.startsWith('/api/v1/') || !ops.get || path.startsWith('/api/v1/audit-events')) continue;
        const url = path.replace(/\/api\/v1\/([a-z-]+)\/\{\w+\}/, (_m, area: string) => `/api/v1/${area}/${ids[area]}`);
        for (const [key, hides] of [
          [hidden, true],
          [shown, false],
        ] as Array<[Tenant, boolean]>) {
          const res = await ctx().request('GET', url, { as: key });
          assert.equal(res.status, 200, `GET ${url}: ${JSON.stringify(res.body).slice(0, 200)}`);
          const found = parse(res.status, res.body).flatMap((record) => marginPaths(record));
          if (hides)
            assert.deepEqual(found, [], `GET ${url} shows a key without margin:read ${found.slice(0, 3).join(', ')}`);
          else if (found.length > 0) seenWithMargin.push(path);
          if (hides)
            assert.ok(
              !JSON.stringify(res.body).includes('kept: a property') ||
                JSON.stringify(res.body).includes('"cost":"kept'),
              `GET ${url} keeps properties`,
            );
        }
        reads++;
      }
      assert.ok(reads >= 20, `${reads} reads`);
      // Without these the check above could pass by finding no cost at all.
      for (const path of [
        '/api/v1/items/{id}',
        '/api/v1/items',
        '/api/v1/items/export',
        '/api/v1/orders/{id}',
        '/api/v1/orders/export',
        '/api/v1/pricing/{id}',
        '/api/v1/events',
        '/api/v1/items/{id}/events',
        '/api/v1/orders/{id}/events',
        '/api/v1/pricing/{id}/events',
      ]) {
        if (doc.paths[path])
          assert.ok(seenWithMargin.includes(path), `${path} shows the margin to a key with margin:read`);
      }
      // Properties are the caller's data: a property named cost stays.
      const order = await ctx().request('GET', `/api/v1/orders/${ids.orders}`, { as: hidden });
      assert.deepEqual(order.body.properties, { erp: { cost: 'kept: a property is data' } });
      assert.equal(order.body.orderItems[0].cost, undefined);
      assert.equal(typeof order.body.orderItems[0].price, 'string');
    });

    it('answers 403 to a write that sends cost without margin:write, and leaves it out of the answer and its replay', async () => {
      const { owner, fixture } = await business(ctx());
      const writer = await ctx().addKey(owner, [...EVERY_AREA]);
      const marginWriter = await ctx().addKey(owner, [...EVERY_AREA, 'margin:write']);
      const item = { item: { name: 'Costed' }, variants: [{ variantName: 'One', currency: 'AUD', price: 2, cost: 1 }] };
      const refused = await ctx().request('POST', '/api/v1/items', { as: writer, body: item });
      assert.equal(refused.status, 403);
      assert.deepEqual(
        [refused.body.errorCode, refused.body.message],
        ['FORBIDDEN', 'This API key lacks the scope margin:write (it sent variants.0.cost)'],
      );
      const factor = await ctx().request('POST', '/api/v1/pricing', {
        as: writer,
        body: { itemListData: { label: 'X', globalCostFactor: 2 } },
      });
      assert.equal(factor.status, 403);
      // A cost in properties is data, not the margin.
      const plain = await ctx().request('POST', '/api/v1/items', {
        as: writer,
        body: { ...item, variants: [{ variantName: 'One', currency: 'AUD', price: 2, properties: { cost: 1 } }] },
      });
      assert.equal(plain.status, 201, JSON.stringify(plain.body));
      assert.equal((await ctx().request('POST', '/api/v1/items', { as: marginWriter, body: item })).status, 201);
      // A body nested 100,000 deep (under the size limit) is looked through without a stack: a 400, never a 500.
      const deep = await ctx().request('POST', '/api/v1/items', {
        as: writer,
        body: `${'{"item":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
      });
      assert.equal(deep.status, 400, JSON.stringify(deep.body));
      assert.equal(
        marginFieldIn(JSON.parse(`${'['.repeat(50_000)}{"cost":1}${']'.repeat(50_000)}`)),
        `${'0.'.repeat(50_000)}cost`,
      );

      // An order's answer carries its lines' cost: left out for this key, and in the replay.
      const headers = { 'idempotency-key': `margin-${Math.random()}` };
      const body = {
        expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
        orderItems: [{ itemVariantId: fixture.variantIds[0], quantity: 1 }],
      };
      const first = await ctx().request('POST', `/api/v1/buyers/${fixture.buyerId}/orders`, {
        as: writer,
        body,
        headers,
      });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      const again = await ctx().request('POST', `/api/v1/buyers/${fixture.buyerId}/orders`, {
        as: writer,
        body,
        headers,
      });
      assert.equal(again.headers['idempotent-replayed'], 'true');
      for (const res of [first, again]) assert.deepEqual(marginPaths(res.body), []);
      // The same stored answer replayed to a key with margin:read shows it.
      const full = await ctx().request('POST', `/api/v1/buyers/${fixture.buyerId}/orders`, {
        as: marginWriter,
        body,
        headers,
      });
      assert.equal(full.headers['idempotent-replayed'], 'true');
      assert.ok(marginPaths(full.body).length > 0);
    });

    it('delivers events without cost to a webhook endpoint a key without margin:read set up, and with it to one an owner set up', async () => {
      receiver.received.length = 0;
      const { owner, fixture } = await business(ctx());
      const restricted = await ctx().addKey(owner, [...EVERY_AREA]);
      const made = async (as: Tenant) => {
        const res = await ctx().request('POST', '/api/v1/webhook-endpoints', {
          as,
          body: { url: receiver.url, eventTypes: ['item.*'] },
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.body;
      };
      const hiding = await made(restricted);
      const showing = await made(owner);
      assert.deepEqual([hiding.hidesMargin, showing.hidesMargin], [true, false]);
      // An endpoint an owner made, changed by a restricted key, hides the margin from then on.
      const taken = await made(owner);
      const changed = await ctx().request('PATCH', `/api/v1/webhook-endpoints/${taken.id}`, {
        as: restricted,
        body: { description: 'mine now' },
      });
      assert.equal(changed.body.hidesMargin, true);

      const itemId = (await ctx().request('GET', '/api/v1/items?limit=1', { as: owner })).body.items[0].id;
      await ctx().request('PATCH', `/api/v1/items/${itemId}`, {
        as: owner,
        body: { updateVariants: [{ id: fixture.variantIds[0], cost: 6 }] },
      });
      const got = await receiver.until((r) => r.length === 3);
      assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 1, 'one event to three endpoints');
      const shownTo = got.filter((r) => marginPaths(r.event).length > 0);
      assert.equal(shownTo.length, 1, "the owner's endpoint sees the cost");
      // Each delivery is signed over the body it carries: the one without cost verifies with its own endpoint's secret.
      const { Webhook } = await import('standardwebhooks');
      for (const r of got.filter((x) => !shownTo.includes(x))) {
        assert.ok(
          [hiding, taken].some((e) => {
            try {
              new Webhook(e.secret).verify(r.body, r.headers);
              return true;
            } catch {
              return false;
            }
          }),
        );
      }
      new Webhook(showing.secret).verify(shownTo[0].body, shownTo[0].headers);
    });
  },
  {
    config: {
      webhooks: {
        ...loadConfig({}).webhooks,
        allowPrivateNetworks: true,
        retrySchedule: [0, 1, 1, 1],
        timeoutMs: 1500,
      },
    },
  },
);
