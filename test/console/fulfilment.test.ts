import assert from 'node:assert/strict';
import { it } from 'node:test';
import { trackingLinks } from '../../src/console/tracking.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant } from '../helpers/context.ts';
import { getOrder } from '../helpers/orders.ts';
import { acknowledge, orderOfThree, shipOk, sscc } from '../fulfilment/helpers.ts';

const HOST = 'console.test';
const FORM = { 'content-type': 'application/x-www-form-urlencoded', host: HOST };
type Res = { statusCode: number; headers: Record<string, unknown>; body: string };

it('links tracking numbers to the carriers whose tracking page it knows, by SCAC or name, and no other', () => {
  assert.deepEqual(trackingLinks({ name: 'United Parcel Service', scac: 'upsn' }, ['1Z 99/9']), [
    { number: '1Z 99/9', url: 'https://www.ups.com/track?tracknum=1Z%2099%2F9' },
  ]);
  assert.match(trackingLinks({ name: 'FedEx Ground' }, ['7489'])[0].url!, /^https:\/\/www\.fedex\.com\//);
  assert.deepEqual(trackingLinks({ name: 'Local courier', scac: 'LOCL' }, ['A1']), [{ number: 'A1', url: null }]);
  assert.deepEqual(trackingLinks(null, ['A1']), [{ number: 'A1', url: null }]);
});

/**
 * Fulfilment in the console (issue 64): the order page shows the current acknowledgement by line
 * and the shipments with packages and tracking links; owners and admins acknowledge and record
 * shipments through forms (post, redirect, flash), viewers only look; the Shipments page lists
 * with filters and cursor pages.
 */
describeEachBackend('console fulfilment', (ctx) => {
  async function signInAs(t: Tenant, role: 'owner' | 'admin' | 'viewer') {
    const email = `${role}-${ctx().backend}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const { password } = await createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createUser(c, { email, name: `${role} person`, role }),
    );
    const res = await ctx().app.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: FORM,
      payload: new URLSearchParams({ email, password }).toString(),
    });
    return String(res.headers['set-cookie'] ?? '').split(';')[0];
  }
  const get = (url: string, cookie: string) =>
    ctx().app.inject({ method: 'GET', url, headers: { cookie, host: HOST } }) as Promise<Res>;
  async function post(url: string, cookie: string, form: Record<string, string>): Promise<Res> {
    const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/console/shipments', cookie)).body)?.[1];
    assert.ok(csrf);
    return ctx().app.inject({
      method: 'POST',
      url,
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ ...form, csrf }).toString(),
    }) as Promise<Res>;
  }
  /** A form sent: the 303, then the page it leads to with its flash, as a browser follows it. */
  async function act(url: string, cookie: string, form: Record<string, string>) {
    const res = await post(url, cookie, form);
    assert.equal(res.statusCode, 303, `${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`);
    const flash = [res.headers['set-cookie']]
      .flat()
      .map(String)
      .find((c) => c.startsWith('sl_flash='))
      ?.split(';')[0];
    return get(String(res.headers.location), flash ? `${cookie}; ${flash}` : cookie);
  }

  it('shows the acknowledgement line by line and each shipment with its packages and tracking links', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const viewer = await signInAs(t, 'viewer');
    const before = await get(`/console/orders/${order.id}`, viewer);
    assert.equal(before.statusCode, 200);
    assert.match(before.body, /Not acknowledged yet/);
    assert.match(before.body, /No shipments yet/);

    await acknowledge(ctx(), t, order.id, {
      lines: [
        { orderItemId: lines.b, decision: 'QUANTITY_CHANGED', quantity: 6, reason: 'Short of stock' },
        { orderItemId: lines.c, decision: 'REJECTED', reasonCode: 'DISCONTINUED' },
      ],
    });
    const shipment = await shipOk(ctx(), t, order.id, {
      carrier: { name: 'UPS', scac: 'UPSN' },
      trackingNumbers: ['1Z999AA10123456784'],
      packages: [
        { sscc: sscc(7), weight: { value: 12.5, unit: 'kg' }, lines: [{ orderItemId: lines.a, quantity: 20 }] },
        { lines: [{ orderItemId: lines.b, quantity: 6 }] },
      ],
    });
    const page = (await get(`/console/orders/${order.id}`, viewer)).body;
    assert.match(page, /ACCEPTED_WITH_CHANGES/);
    assert.match(
      page,
      /<td>2<\/td><td><span class="badge warn">QUANTITY_CHANGED<\/span><\/td><td class="number">10<\/td><td class="number">6<\/td>/,
    );
    assert.match(page, /Short of stock/);
    assert.match(page, /DISCONTINUED/);
    assert.match(page, new RegExp(`Shipment <code>${shipment.id}</code>`));
    assert.match(page, new RegExp(sscc(7)));
    assert.match(page, /12\.5 kg/);
    assert.match(page, /Line 1 × 20/);
    assert.match(page, /Line 2 × 6/);
    assert.match(
      page,
      /<a href="https:\/\/www\.ups\.com\/track\?tracknum=1Z999AA10123456784" rel="noopener noreferrer external">1Z999AA10123456784<\/a>/,
    );
    assert.doesNotMatch(
      page,
      /Record a shipment|action="\/console\/orders\/[^"]+\/acknowledgements"/,
      'a viewer has no forms',
    );
    const refused = await post(`/console/orders/${order.id}/shipments`, viewer, { q1: '1' });
    assert.equal(refused.statusCode, 403);
    assert.equal((await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t })).body.items.length, 1);
  });

  it('acknowledges and records shipments from the order page, refusing what the API refuses, with the reason', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const admin = await signInAs(t, 'admin');
    const form = (await get(`/console/orders/${order.id}`, admin)).body;
    assert.match(form, /Record a shipment/);
    assert.match(form, /name="d1"/);

    const acked = await act(`/console/orders/${order.id}/acknowledgements`, admin, {
      d1: 'ACCEPTED',
      d2: 'RESCHEDULED',
      e2: '2030-03-01',
      d3: 'REJECTED',
      r3: 'Discontinued',
      phase: 'ACTIVE',
    });
    assert.match(acked.body, /Acknowledged: accepted with changes\./);
    const current = (await getOrder(ctx(), t, order.id)).body;
    assert.equal(current.phase, 'ACTIVE');
    const ack = (await ctx().request('GET', `/api/v1/orders/${order.id}/acknowledgements`, { as: t })).body.items[0];
    assert.deepEqual(
      ack.lines.map((l: any) => [l.decision, l.quantity, l.expectedAt, l.reason]),
      [
        ['ACCEPTED', 50, null, null],
        ['RESCHEDULED', 10, '2030-03-01T00:00:00.000Z', null],
        ['REJECTED', 0, null, 'Discontinued'],
      ],
    );
    const needsPrice = await act(`/console/orders/${order.id}/acknowledgements`, admin, {
      d1: 'PRICE_CHANGED',
    });
    assert.match(needsPrice.body, /class="flash bad" role="alert">lines\.0\.price: Required for PRICE_CHANGED/);

    const shipped = await act(`/console/orders/${order.id}/shipments`, admin, {
      q1: '30',
      q2: '4',
      carrier: 'FedEx',
      trackingNumbers: '7489 7490',
      sscc: sscc(3),
      weight: '8',
      weightUnit: 'lb',
      shippedAt: '2030-01-10',
      externalReference: 'ASN-9',
    });
    assert.match(shipped.body, /Recorded shipment shp_\w+: 34 units\./);
    const [recorded] = (await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t })).body.items;
    assert.deepEqual(recorded.packages, [
      {
        sscc: sscc(3),
        trackingNumber: null,
        weight: { value: 8, unit: 'lb' },
        dimensions: null,
        lines: [
          { orderItemId: lines.a, quantity: 30 },
          { orderItemId: lines.b, quantity: 4 },
        ],
      },
    ]);
    assert.deepEqual(recorded.trackingNumbers, ['7489', '7490']);
    assert.equal(recorded.shippedAt, '2030-01-10T00:00:00.000Z');
    assert.match(shipped.body, /<td class="number">20<\/td>/, 'what is left of line 1 to ship');

    const over = await act(`/console/orders/${order.id}/shipments`, admin, { q1: '21' });
    assert.match(over.body, /role="alert">Line 1 \(oi_\w+\) has 20 left to ship/);
    const badSscc = await act(`/console/orders/${order.id}/shipments`, admin, {
      q1: '1',
      sscc: '123456789012345678',
    });
    assert.match(badSscc.body, /role="alert">packages\.0\.sscc: Not an SSCC/);
    const fraction = await act(`/console/orders/${order.id}/shipments`, admin, { q1: 'lots' });
    assert.match(fraction.body, /role="alert">lines\.0\.quantity: /);
    const nothing = await act(`/console/orders/${order.id}/shipments`, admin, {});
    assert.match(nothing.body, /Enter the quantity shipped of at least one line/);
    assert.equal((await ctx().request('GET', `/api/v1/orders/${order.id}/shipments`, { as: t })).body.items.length, 1);

    const other = await ctx().createTenant('Other');
    const foreign = await orderOfThree(ctx(), other);
    const notFound = await post(`/console/orders/${foreign.order.id}/shipments`, admin, {
      q1: '1',
    });
    assert.equal(notFound.statusCode, 404, "another business's order is not found");
  });

  it("posts a 100-line order's forms whole, every empty field included, within the console's form limit", async () => {
    const t = await ctx().createTenant();
    const item = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: {
        item: { name: 'Bolts' },
        variants: Array.from({ length: 100 }, (_, i) => ({ variantName: `M${i}`, currency: 'AUD', price: 1 })),
      },
    });
    assert.equal(item.status, 201, JSON.stringify(item.body));
    const buyer = await ctx().request('POST', '/api/v1/buyers', { as: t, body: { buyer: { name: 'Big buyer' } } });
    const order = await ctx().request('POST', `/api/v1/buyers/${buyer.body.id}/orders`, {
      as: t,
      body: {
        expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
        orderItems: item.body.variantIds.map((v: string) => ({ itemVariantId: v, quantity: 2 })),
      },
    });
    assert.equal(order.status, 201, JSON.stringify(order.body));
    const owner = await signInAs(t, 'owner');
    const page = (await get(`/console/orders/${order.body.id}`, owner)).body;
    /** The form posting to `action`, as a browser sends it: every field, the selects at their first option. */
    const formOf = (action: string) => {
      const html = page.slice(
        page.indexOf(`action="${action}"`),
        page.indexOf('</form>', page.indexOf(`action="${action}"`)),
      );
      const fields: Record<string, string> = {};
      for (const m of html.matchAll(/<(input|select)[^>]*name="([^"]+)"[^>]*>(?:<option>([^<]*))?/g))
        if (m[2] !== 'csrf') fields[m[2]] = m[1] === 'select' ? (m[3] ?? '') : '';
      return fields;
    };
    const ack = formOf(`/console/orders/${order.body.id}/acknowledgements`);
    assert.equal(Object.keys(ack).filter((k) => /^d\d+$/.test(k)).length, 100);
    ack.d100 = 'REJECTED';
    const acked = await post(`/console/orders/${order.body.id}/acknowledgements`, owner, ack);
    assert.equal(acked.statusCode, 303, acked.body.slice(0, 300));
    const current = await ctx().request('GET', `/api/v1/orders/${order.body.id}/acknowledgements`, { as: t });
    assert.equal(current.body.items[0].decision, 'ACCEPTED_WITH_CHANGES');
    const ship = formOf(`/console/orders/${order.body.id}/shipments`);
    for (let n = 1; n <= 99; n++) ship[`q${n}`] = '2';
    const shipped = await post(`/console/orders/${order.body.id}/shipments`, owner, ship);
    assert.equal(shipped.statusCode, 303, shipped.body.slice(0, 300));
    assert.equal((await getOrder(ctx(), t, order.body.id)).body.status, 'IN_TRANSIT', 'all that may ship has shipped');
  });

  it('lists shipments with filters and cursor pages, linked from the navigation', async () => {
    const t = await ctx().createTenant();
    const { order, lines } = await orderOfThree(ctx(), t);
    const ids: string[] = [];
    for (let i = 0; i < 27; i++)
      ids.push(
        (
          await shipOk(ctx(), t, order.id, {
            lines: [{ orderItemId: lines.a, quantity: 1 }],
            properties: { asn: `ASN-${i}` },
            ...(i === 3 && { carrier: { name: 'DHL' }, trackingNumbers: ['JD0001'] }),
          })
        ).id,
      );
    await ctx().request('DELETE', `/api/v1/shipments/${ids[0]}`, { as: t });
    const viewer = await signInAs(t, 'viewer');
    const first = await get('/console/shipments', viewer);
    assert.equal(first.statusCode, 200);
    assert.match(first.body, /<a href="\/console\/shipments" aria-current="page">Shipments<\/a>/);
    assert.match(first.body, /27 shipments, newest first/);
    const shown = (body: string) => [...body.matchAll(/#shipment-(shp_\w+)"/g)].map((m) => m[1]);
    assert.deepEqual(shown(first.body), ids.slice(2).reverse());
    const next = /<a href="([^"]+)">Next →<\/a>/.exec(first.body)?.[1].replaceAll('&amp;', '&');
    assert.ok(next);
    const second = await get(next, viewer);
    assert.deepEqual(shown(second.body), ids.slice(0, 2).reverse());
    assert.match(second.body, /← First page/);
    assert.match(first.body, /dhl\.com[^"]*JD0001/);

    const voided = await get('/console/shipments?status=VOIDED', viewer);
    assert.deepEqual(shown(voided.body), [ids[0]]);
    const byAsn = await get('/console/shipments?propertyPath=asn&propertyValue=ASN-5', viewer);
    assert.deepEqual(shown(byAsn.body), [ids[5]]);
    const byOrder = await get(`/console/shipments?orderId=${order.id}&since=2000-01-01`, viewer);
    assert.match(byOrder.body, /27 shipments/);
    const none = await get('/console/shipments?since=2999-01-01', viewer);
    assert.match(none.body, /No shipments match these filters/);
    for (const hostile of [
      'status=LOST',
      'orderId=%3Cscript%3E',
      'since=yesterday',
      'after=x',
      'after=2030-01-01%20ord_1',
    ]) {
      const res = await get(`/console/shipments?${hostile}`, viewer);
      assert.equal(res.statusCode, 400, hostile);
      assert.match(res.body, /class="error" role="alert"/);
      assert.doesNotMatch(res.body, /<script>/);
    }
  });
});
