import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { IMPORT_RETENTION_DAYS, purgeImportsBefore } from '../../src/imports/repository.ts';
import { MAX_LINE_BYTES } from '../../src/imports/lines.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { securityCases } from '../helpers/security.ts';

const NDJSON = { 'content-type': 'application/x-ndjson' };
const file = (lines: unknown[]) => `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;

async function send(c: TestContext, as: Tenant, body: string, query = '', headers: Record<string, string> = {}) {
  return c.request('POST', `/api/v1/imports${query}`, { as, body, headers: { ...NDJSON, ...headers } });
}

/** Waits until the import has finished, and answers it with its results. */
async function finished(c: TestContext, as: Tenant, id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await c.request('GET', `/api/v1/imports/${id}`, { as });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (r.body.state === 'COMPLETED' || r.body.state === 'STOPPED') {
      const results = await c.request('GET', `/api/v1/imports/${id}/results`, { as });
      assert.equal(results.status, 200);
      assert.match(String(results.headers['content-type']), /^application\/x-ndjson/);
      const text = typeof results.body === 'string' ? results.body : `${JSON.stringify(results.body)}\n`;
      return {
        imp: r.body,
        results: text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l)),
      };
    }
    assert.ok(Date.now() < deadline, `the import finished within 30 s: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const item = (name: string, ref: string) => ({
  op: 'create',
  resource: 'item',
  ref,
  data: {
    item: { name },
    variants: [
      { variantName: '500g', currency: 'AUD', price: 10, cost: 4 },
      { variantName: '1kg', currency: 'AUD', price: 18, cost: 7 },
    ],
  },
});

/**
 * Bulk import (issue 47): a file of lines, each the body of a single call, applied in order and
 * each exactly once, with later lines naming earlier lines' records by ref; per-line results with
 * the single call's errors; dry runs; the same file under the same Idempotency-Key is the same import.
 */
describeEachBackend('bulk import', (ctx) => {
  it('applies a catalogue, buyers, orders and invoices from one file, lines naming earlier lines by ref', async () => {
    const t = await ctx().createTenant();
    const body = file([
      item('Green tea', 'tea'),
      { op: 'create', resource: 'buyer', ref: 'acme', data: { buyer: { name: 'Acme Foods' } } },
      '',
      {
        op: 'create',
        resource: 'order',
        ref: 'po-1',
        buyerId: { $ref: 'acme' },
        data: {
          expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
          orderItems: [{ itemVariantId: { $ref: 'tea', variant: 1 }, quantity: 3 }],
        },
      },
      {
        op: 'patch',
        resource: 'order',
        ref: 'po-1-notes',
        id: { $ref: 'po-1' },
        data: { order: { notes: 'Imported' } },
      },
      { op: 'create', resource: 'invoice', ref: 'inv-1', data: { orderId: { $ref: 'po-1' }, reference: 'INV-1' } },
      { op: 'patch', resource: 'item', ref: 'tea-again', id: { $ref: 'tea' }, data: { name: 'Green tea' } },
    ]);
    const posted = await send(ctx(), t, body);
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    assert.equal(posted.body.lines, 7);
    assert.equal(posted.headers.location, `/api/v1/imports/${posted.body.id}`);
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.equal(imp.state, 'COMPLETED');
    assert.equal(imp.linesDone, 7);
    assert.deepEqual(imp.counts, { created: 4, updated: 1, unchanged: 1, failed: 0 }, JSON.stringify(results));
    assert.deepEqual(
      results.map((r) => [r.line, r.ref, r.outcome]),
      [
        [1, 'tea', 'created'],
        [2, 'acme', 'created'],
        [4, 'po-1', 'created'],
        [5, 'po-1-notes', 'updated'],
        [6, 'inv-1', 'created'],
        [7, 'tea-again', 'unchanged'],
      ],
    );
    const [tea, acme, order, , invoice] = results;
    assert.equal(tea.variantIds.length, 2);
    const got = await ctx().request('GET', `/api/v1/orders/${order.id}`, { as: t });
    assert.equal(got.status, 200);
    assert.equal(got.body.notes, 'Imported');
    assert.equal(got.body.orderItems[0].itemListEntry.itemVariantId, tea.variantIds[1]);
    assert.equal(got.body.orderItems[0].quantity, 3);
    const inv = await ctx().request('GET', `/api/v1/invoices/${invoice.id}`, { as: t });
    assert.equal(inv.body.orderId, order.id);
    assert.ok(acme.id.startsWith('phm_') || acme.id.length > 0);

    // Every change is in the feed like any other, with the import's id as the request that asked for it.
    const feed = await ctx().request('GET', '/api/v1/events?after=0&limit=100', { as: t });
    const mine = feed.body.items.filter((e: any) => e.requestId === imp.id);
    assert.deepEqual(
      mine.map((e: any) => e.type),
      ['item.created', 'buyer.created', 'order.created', 'order.updated', 'invoice.created'],
    );
  });

  it("reports each failed line with the single call's errors, and goes on (or stops, with onError=stop)", async () => {
    const t = await ctx().createTenant();
    const badItem = { item: { name: '' }, variants: [{ variantName: 'x', currency: 'XXX', price: 'free' }] };
    const single = await ctx().request('POST', '/api/v1/items', { as: t, body: badItem });
    assert.equal(single.status, 400);
    const lines = [
      '{"op": "create", "resource": "item", "data": {',
      JSON.stringify({ op: 'create', resource: 'item', ref: 'bad', data: badItem }),
      JSON.stringify({ op: 'create', resource: 'order', buyerId: { $ref: 'nobody' }, data: {} }),
      JSON.stringify({ op: 'delete', resource: 'item', data: {} }),
      JSON.stringify({ op: 'patch', resource: 'price_list', id: 'list_x', data: {} }),
      JSON.stringify({
        op: 'create',
        resource: 'order',
        ref: 'o',
        data: {
          expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
          orderItems: [{ itemVariantId: { $ref: 'bad' }, quantity: 1 }],
        },
      }),
      JSON.stringify(item('Fine', 'fine')),
      JSON.stringify(item('Twice', 'fine')),
      JSON.stringify({
        op: 'patch',
        resource: 'order',
        id: 'ord_00000000000000000000000000',
        data: { order: { notes: 'x' } },
      }),
      `{"op":"create","resource":"item","data":{"item":{"name":"${'x'.repeat(MAX_LINE_BYTES)}"}}}`,
      JSON.stringify({ op: 'create', resource: 'item', data: { item: { name: 'No variants' } }, extra: 1 }),
      '[1, 2, 3]',
      JSON.stringify({ op: 'patch', resource: 'item', data: { name: 'no id' } }),
    ];
    const posted = await send(ctx(), t, lines.join('\n'));
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.equal(imp.state, 'COMPLETED');
    assert.deepEqual(imp.counts, { created: 1, updated: 0, unchanged: 0, failed: 12 });
    const byLine = new Map(results.map((r) => [r.line, r]));
    assert.equal(results.length, 13);
    assert.equal(byLine.get(1).error.fieldErrors['(root)'], 'The line is not valid JSON');
    assert.deepEqual(
      byLine.get(2).error.fieldErrors,
      single.body.fieldErrors,
      'the same fieldErrors as the single call',
    );
    assert.equal(byLine.get(2).error.errorCode, 'VALIDATION_ERROR');
    assert.equal(byLine.get(3).error.fieldErrors.buyerId, "No earlier line has the ref 'nobody'");
    assert.equal(
      byLine.get(4).error.fieldErrors.op,
      "Invalid enum value. Expected 'create' | 'patch' | 'upsert', received 'delete'",
    );
    assert.match(byLine.get(5).error.fieldErrors.op, /price_list line takes op create/);
    assert.equal(byLine.get(6).error.fieldErrors['orderItems.0.itemVariantId'], "Line 2 (ref 'bad') failed");
    assert.equal(byLine.get(7).outcome, 'created');
    assert.equal(byLine.get(8).error.fieldErrors.ref, "Line 7 already has the ref 'fine'");
    assert.equal(byLine.get(9).error.errorCode, 'NOT_FOUND');
    assert.equal(byLine.get(9).error.message, 'Order not found');
    assert.match(byLine.get(10).error.fieldErrors['(root)'], /longer than/);
    assert.equal(byLine.get(11).error.fieldErrors.extra, 'Unrecognized key');
    assert.ok(byLine.get(12).error);
    assert.equal(byLine.get(13).error.fieldErrors.id, 'Required: the record to patch');

    const stopped = await send(ctx(), t, file([item('One', 'a'), '{not json', item('Never', 'b')]), '?onError=stop');
    const { imp: s, results: sr } = await finished(ctx(), t, stopped.body.id);
    assert.equal(s.state, 'STOPPED');
    assert.equal(s.linesDone, 2);
    assert.deepEqual(
      sr.map((r) => r.outcome),
      ['created', 'failed'],
    );
    const never = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.ok(!never.body.items.some((i: any) => i.name === 'Never'));
  });

  it('undoes a line that fails after it wrote, alone: the lines applied with it in one transaction stay, with their events', async () => {
    const t = await ctx().createTenant();
    const order = (ref: string, items: unknown[]) => ({
      op: 'create',
      resource: 'order',
      ref,
      buyerId: { $ref: 'b' },
      data: { expectedDeliveryAt: '2030-01-01T00:00:00.000Z', orderItems: items },
    });
    const posted = await send(
      ctx(),
      t,
      file([
        item('Tea', 'tea'),
        { op: 'create', resource: 'buyer', ref: 'b', data: { buyer: { name: 'Buyer' } } },
        order('good', [{ itemVariantId: { $ref: 'tea', variant: 0 }, quantity: 1 }]),
        // Its first line is fine, its second names no variant: the order fails after it began writing.
        order('half', [
          { itemVariantId: { $ref: 'tea', variant: 1 }, quantity: 1 },
          { itemVariantId: 'var_00000000000000000000000000', quantity: 1 },
        ]),
        { op: 'patch', resource: 'order', id: { $ref: 'good' }, data: { order: { notes: 'first' } } },
        { op: 'patch', resource: 'order', id: { $ref: 'good' }, data: { order: { notes: 'second' } } },
        { op: 'patch', resource: 'order', id: { $ref: 'good' }, data: { order: { notes: 'second' } } },
      ]),
    );
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['created', 'created', 'created', 'failed', 'updated', 'updated', 'unchanged'],
      JSON.stringify(results),
    );
    assert.deepEqual(imp.counts, { created: 3, updated: 2, unchanged: 1, failed: 1 });
    const orders = await ctx().request('GET', '/api/v1/orders?limit=100', { as: t });
    assert.deepEqual(
      orders.body.items.map((o: any) => [o.id, o.notes, o.version]),
      [[results[2].id, 'second', 3]],
      'the failed order left nothing',
    );
    const feed = await ctx().request('GET', '/api/v1/events?after=0&limit=100', { as: t });
    const mine = feed.body.items.filter((e: any) => e.requestId === imp.id);
    assert.deepEqual(
      mine.map((e: any) => [e.type, e.data.object.id]),
      [
        ['item.created', results[0].id],
        ['buyer.created', results[1].id],
        ['order.created', results[2].id],
        ['order.updated', results[2].id],
        ['order.updated', results[2].id],
      ],
    );
  });

  it('stores a run of item lines together, each failing alone as the single call would, and a run the store refuses line by line', async () => {
    const t = await ctx().createTenant();
    const existing = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Old', handle: 'taken' }, variants: [{ currency: 'AUD', price: 1 }] },
    });
    assert.equal(existing.status, 201);
    const named = (name: string, ref: string, handle?: string) => {
      const line = item(name, ref);
      return handle === undefined ? line : { ...line, data: { ...line.data, item: { name, handle } } };
    };
    // A trigger refuses one item: the run it is stored with fails as a whole, and is applied line by line.
    if (ctx().backend === 'sqlite') {
      await sql`create trigger refuse_boom before insert on items when new.name = 'Boom'
        begin select raise(abort, 'refused'); end`.execute(ctx().db);
    } else {
      await sql`create function refuse_boom() returns trigger language plpgsql as $$
        begin if new.name = 'Boom' then raise exception 'refused'; end if; return new; end $$`.execute(ctx().db);
      await sql`create trigger refuse_boom before insert on items for each row execute function refuse_boom()`.execute(
        ctx().db,
      );
    }
    try {
      const lines = [
        named('Alpha', 'a'),
        named('Beta', 'b', 'taken'),
        named('Gamma', 'c', 'fresh'),
        named('Delta', 'd', 'fresh'),
        named('Alpha', 'e'),
        named('Epsilon', 'a'),
        { op: 'create', resource: 'buyer', ref: 'buyer', data: { buyer: { name: 'Buyer' } } },
        named('Zeta', 'z'),
        named('Boom', 'boom'),
        named('Eta', 'h'),
        {
          op: 'create',
          resource: 'order',
          buyerId: { $ref: 'buyer' },
          data: {
            expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
            orderItems: [
              { itemVariantId: { $ref: 'e', variant: 1 }, quantity: 1 },
              { itemVariantId: { $ref: 'h', variant: 0 }, quantity: 2 },
            ],
          },
        },
      ];
      const posted = await send(ctx(), t, file(lines));
      const { imp, results } = await finished(ctx(), t, posted.body.id);
      assert.deepEqual(
        results.map((r) => [r.outcome, r.error?.errorCode ?? null]),
        [
          ['created', null],
          ['failed', 'CONFLICT'],
          ['created', null],
          ['failed', 'CONFLICT'],
          ['created', null],
          ['failed', 'VALIDATION_ERROR'],
          ['created', null],
          ['created', null],
          ['failed', 'INTERNAL_ERROR'],
          ['created', null],
          ['created', null],
        ],
        JSON.stringify(results),
      );
      assert.equal(results[1].error.message, "An item with handle 'taken' already exists");
      assert.equal(results[3].error.message, "An item with handle 'fresh' already exists");
      assert.deepEqual(results[5].error.fieldErrors, { ref: "Line 1 already has the ref 'a'" });
      assert.deepEqual(imp.counts, { created: 7, updated: 0, unchanged: 0, failed: 4 });

      const created = [0, 2, 4, 7, 9].map((i) => results[i]);
      const items = await Promise.all(
        created.map(async (r) => (await ctx().request('GET', `/api/v1/items/${r.id}`, { as: t })).body),
      );
      assert.deepEqual(
        items.map((i) => [i.name, i.handle, i.variants.map((v: any) => [v.variantName, v.price, v.sequence])]),
        [
          [
            'Alpha',
            'alpha',
            [
              ['500g', 10, 1],
              ['1kg', 18, 2],
            ],
          ],
          [
            'Gamma',
            'fresh',
            [
              ['500g', 10, 1],
              ['1kg', 18, 2],
            ],
          ],
          [
            'Alpha',
            'alpha-2',
            [
              ['500g', 10, 1],
              ['1kg', 18, 2],
            ],
          ],
          [
            'Zeta',
            'zeta',
            [
              ['500g', 10, 1],
              ['1kg', 18, 2],
            ],
          ],
          [
            'Eta',
            'eta',
            [
              ['500g', 10, 1],
              ['1kg', 18, 2],
            ],
          ],
        ],
      );
      const order = await ctx().request('GET', `/api/v1/orders/${results[10].id}`, { as: t });
      assert.deepEqual(
        order.body.orderItems.map((l: any) => [l.itemListEntry.itemVariantId, l.quantity]),
        [
          [items[2].variants[1].id, 1],
          [items[4].variants[0].id, 2],
        ],
      );
      // Each created item has its event, in line order, as the single call writes it.
      const feed = await ctx().request('GET', '/api/v1/events?after=0&limit=100&types=item.created', { as: t });
      const mine = feed.body.items.filter((e: any) => e.requestId === imp.id);
      assert.deepEqual(
        mine.map((e: any) => e.data.object),
        items,
      );
    } finally {
      await sql`drop trigger refuse_boom${sql.raw(ctx().backend === 'sqlite' ? '' : ' on items')}`.execute(ctx().db);
      if (ctx().backend === 'postgres') await sql`drop function refuse_boom()`.execute(ctx().db);
    }
  });

  it('upserts: creates unless a record matches the handle or property path, else patches it (or leaves it, without a patch)', async () => {
    const t = await ctx().createTenant();
    const tea = (patch?: unknown) => ({
      op: 'upsert',
      resource: 'item',
      ref: 'tea',
      match: 'handle',
      ...(patch ? { patch } : {}),
      data: {
        item: { name: 'Green tea', handle: 'green-tea', properties: { erp: { no: 7 } } },
        variants: [{ variantName: '500g', currency: 'AUD', price: 10 }],
      },
    });
    const order = (ref: string, no: string, patch?: unknown) => ({
      op: 'upsert',
      resource: 'order',
      ref,
      match: 'properties.erp.po',
      buyerId: { $ref: 'b' },
      ...(patch ? { patch } : {}),
      data: {
        expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
        properties: { erp: { po: no } },
        orderItems: [{ itemVariantId: { $ref: 'tea', variant: 0 }, quantity: 1 }],
      },
    });
    const buyer = {
      op: 'upsert',
      resource: 'buyer',
      ref: 'b',
      match: 'properties.erp.customer',
      data: { buyer: { name: 'Acme', properties: { erp: { customer: 'C-1' } } } },
    };
    const first = await finished(ctx(), t, (await send(ctx(), t, file([tea(), buyer, order('o1', 'PO-1')]))).body.id);
    assert.deepEqual(
      first.results.map((r) => r.outcome),
      ['created', 'created', 'created'],
      JSON.stringify(first.results),
    );

    const again = await finished(
      ctx(),
      t,
      (
        await send(
          ctx(),
          t,
          file([
            tea({ description: 'Loose leaf' }),
            buyer,
            order('o1', 'PO-1', { order: { notes: 'Again' } }),
            order('o2', 'PO-2'),
            tea(),
          ]),
        )
      ).body.id,
    );
    assert.deepEqual(
      again.results.map((r) => [r.outcome, r.id]),
      [
        ['updated', first.results[0].id],
        ['unchanged', first.results[1].id],
        ['updated', first.results[2].id],
        ['created', again.results[3].id],
        ['failed', null],
      ],
      JSON.stringify(again.results),
    );
    assert.equal(again.results[4].error.fieldErrors.ref, "Line 1 already has the ref 'tea'");
    assert.deepEqual(
      again.results[0].variantIds,
      first.results[0].variantIds,
      'a matched item names its variants for later lines',
    );
    assert.equal(
      (await ctx().request('GET', `/api/v1/items/${first.results[0].id}`, { as: t })).body.description,
      'Loose leaf',
    );
    assert.equal((await ctx().request('GET', `/api/v1/orders/${first.results[2].id}`, { as: t })).body.notes, 'Again');
    const items = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.equal(items.body.items.length, 1, 'matched, not created again');

    // A key two records share matches neither: the line fails, as a conflict.
    await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: {
        item: { name: 'Twin', properties: { erp: { no: 7 } } },
        variants: [{ variantName: 'a', currency: 'AUD', price: 1 }],
      },
    });
    const refused = await finished(
      ctx(),
      t,
      (
        await send(
          ctx(),
          t,
          file([
            {
              op: 'upsert',
              resource: 'item',
              match: 'properties.erp.no',
              data: {
                item: { name: 'Third', properties: { erp: { no: '7' } } },
                variants: [{ variantName: 'a', currency: 'AUD', price: 1 }],
              },
            },
            { op: 'upsert', resource: 'item', data: { item: { name: 'No match' }, variants: [] } },
            { op: 'upsert', resource: 'buyer', match: 'handle', data: { buyer: { name: 'X' } } },
            { op: 'upsert', resource: 'buyer', match: 'properties.erp.customer', data: { buyer: { name: 'X' } } },
            {
              op: 'upsert',
              resource: 'buyer',
              match: 'properties.erp.customer',
              data: { buyer: { name: 'X', properties: { erp: { customer: 'C-1' } } } },
              patch: { buyer: { name: 5 } },
            },
            { op: 'create', resource: 'buyer', match: 'properties.erp.customer', data: { buyer: { name: 'X' } } },
            { op: 'upsert', resource: 'price_list', match: 'properties.a', data: {} },
            { op: 'upsert', resource: 'item', match: 'properties.bad path', data: {} },
          ]),
        )
      ).body.id,
    );
    const errors = refused.results.map((r) => r.error);
    assert.equal(errors[0].errorCode, 'CONFLICT');
    assert.equal(errors[0].message, 'More than one item has properties.erp.no "7"');
    assert.match(errors[1].fieldErrors.match, /^Required/);
    assert.match(errors[2].fieldErrors.match, /Only items have a handle/);
    assert.match(errors[3].fieldErrors.match, /no text, number or boolean at erp.customer/);
    assert.ok(errors[4].fieldErrors['patch.buyer.name'], JSON.stringify(errors[4]));
    assert.match(errors[5].fieldErrors.match, /Only an upsert line/);
    assert.match(errors[6].fieldErrors.op, /price_list line takes op create$/);
    assert.ok(errors[7].fieldErrors.match, JSON.stringify(errors[7]));
  });

  it('checks every line in a dry run and writes nothing', async () => {
    const t = await ctx().createTenant();
    const before = await ctx().request('GET', '/api/v1/events?after=0&limit=100', { as: t });
    const posted = await send(
      ctx(),
      t,
      file([
        item('Dry', 'dry'),
        { op: 'create', resource: 'buyer', ref: 'b', data: { buyer: { name: 'Buyer' } } },
        {
          op: 'create',
          resource: 'order',
          buyerId: { $ref: 'b' },
          data: {
            expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
            orderItems: [{ itemVariantId: { $ref: 'dry', variant: 0 }, quantity: 1 }],
          },
        },
        { op: 'create', resource: 'item', data: { item: { name: '' }, variants: [] } },
        // The item of line 1 would have two variants: a third is refused as in a real run.
        {
          op: 'create',
          resource: 'order',
          buyerId: { $ref: 'b' },
          data: {
            expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
            orderItems: [{ itemVariantId: { $ref: 'dry', variant: 2 }, quantity: 1 }],
          },
        },
      ]),
      '?dryRun=true',
    );
    assert.equal(posted.status, 202);
    assert.equal(posted.body.dryRun, true);
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(imp.counts, { created: 3, updated: 0, unchanged: 0, failed: 2 });
    assert.deepEqual(
      results.map((r) => r.id),
      [null, null, null, null, null],
    );
    // What a dry run could not check, it says: a create's variants by number, and a line checked without what earlier lines would have made.
    assert.equal(results[0].variants, 2);
    assert.equal(results[2].note, 'Checked without what lines 1, 2 would have made: a dry run makes nothing');
    assert.equal(results[4].outcome, 'failed');
    assert.equal(
      results[4].error.fieldErrors['orderItems.0.itemVariantId'],
      "Line 1 (ref 'dry') has no variant 2",
      JSON.stringify(results[4]),
    );
    const items = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.equal(items.body.total, 0, 'nothing written');
    const afterward = await ctx().request('GET', '/api/v1/events?after=0&limit=100', { as: t });
    assert.equal(afterward.body.items.length, before.body.items.length, 'no event');
  });

  it('answers the same import for the same file under the same Idempotency-Key, and 422 for another file', async () => {
    const t = await ctx().createTenant();
    const body = file([item('Once', 'once')]);
    const first = await send(ctx(), t, body, '', { 'idempotency-key': 'import-1' });
    assert.equal(first.status, 202);
    const again = await send(ctx(), t, body, '', { 'idempotency-key': 'import-1' });
    assert.equal(again.status, 202);
    assert.equal(again.body.id, first.body.id);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const other = await send(ctx(), t, file([item('Other', 'other')]), '', { 'idempotency-key': 'import-1' });
    assert.equal(other.status, 422);
    assert.equal(other.body.errorCode, 'IDEMPOTENCY_KEY_REUSED');
    const otherOptions = await send(ctx(), t, body, '?dryRun=true', { 'idempotency-key': 'import-1' });
    assert.equal(otherOptions.status, 422);
    await finished(ctx(), t, first.body.id);
    const items = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.equal(items.body.items.filter((i: any) => i.name === 'Once').length, 1);
  });

  it('refuses what is not an import file with a clear 4xx', async () => {
    const t = await ctx().createTenant();
    const json = await ctx().request('POST', '/api/v1/imports', { as: t, body: { op: 'create' } });
    assert.equal(json.status, 415);
    assert.equal(json.body.message, 'Content-Type must be application/x-ndjson or application/jsonl, in UTF-8');
    const empty = await send(ctx(), t, '\n');
    assert.equal(empty.status, 202, 'a file of blank lines is a file');
    const none = await send(ctx(), t, '');
    assert.equal(none.status, 400);
    assert.match(none.body.message, /empty/);
    const badKey = await send(ctx(), t, file([item('x', 'x')]), '', { 'idempotency-key': 'has space' });
    assert.equal(badKey.status, 400);
    const utf8 = await send(ctx(), t, file([item('x', 'x')]), '', {
      'content-type': 'application/x-ndjson; charset=UTF-8',
    });
    assert.equal(utf8.status, 202, 'UTF-8, named');
    const badQuery = await send(ctx(), t, file([item('x', 'x')]), '?onError=explode');
    assert.equal(badQuery.status, 400);
    assert.equal(
      badQuery.body.fieldErrors.onError,
      "Invalid enum value. Expected 'continue' | 'stop', received 'explode'",
    );
    for (const type of ['text/plain', 'application/octet-stream', 'application/x-ndjson; charset=latin1']) {
      const other = await ctx().request('POST', '/api/v1/imports', {
        as: t,
        body: file([item('x', 'x')]),
        headers: { 'content-type': type },
      });
      assert.equal(other.status, 415, type);
      assert.equal(
        other.body.message,
        'Content-Type must be application/x-ndjson or application/jsonl, in UTF-8',
        type,
      );
    }
    const missing = await ctx().request('GET', '/api/v1/imports/imp_00000000000000000000000000', { as: t });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'Import not found');
  });

  it('keeps imports and results from other businesses (404), and lines to what the key may do', async () => {
    const t = await ctx().createTenant();
    const other = await ctx().createTenant('Other');
    const posted = await send(ctx(), t, file([item('Mine', 'mine')]));
    await finished(ctx(), t, posted.body.id);
    assert.equal((await ctx().request('GET', `/api/v1/imports/${posted.body.id}`, { as: other })).status, 404);
    assert.equal((await ctx().request('GET', `/api/v1/imports/${posted.body.id}/results`, { as: other })).status, 404);
    const list = await ctx().request('GET', '/api/v1/imports', { as: other });
    assert.equal(list.body.total, 0);

    const restricted = await ctx().addKey(t, ['imports:write', 'items:write']);
    const mixed = await send(
      ctx(),
      restricted,
      file([
        { op: 'create', resource: 'buyer', data: { buyer: { name: 'Not allowed' } } },
        item('Costly', 'c'),
        {
          op: 'create',
          resource: 'item',
          data: { item: { name: 'Cheap' }, variants: [{ variantName: 'x', currency: 'AUD', price: 1 }] },
        },
        {
          op: 'upsert',
          resource: 'item',
          match: 'handle',
          data: { item: { name: 'Tea', handle: 'tea' }, variants: [{ variantName: 'a', currency: 'AUD', price: 1 }] },
          patch: { variants: [{ cost: 3 }] },
        },
      ]),
    );
    assert.equal(mixed.status, 202);
    const { results } = await finished(ctx(), restricted, mixed.body.id);
    assert.equal(results[0].error.message, 'This API key lacks the scope buyers:write');
    assert.equal(results[1].error.message, 'This API key lacks the scope margin:write (it sent variants.0.cost)');
    assert.equal(results[2].outcome, 'created');
    assert.equal(
      results[3].error.message,
      'This API key lacks the scope margin:write (it sent patch.variants.0.cost)',
      "a path in an upsert's patch names it",
    );
    const readOnly = await ctx().addKey(t, ['items:write']);
    assert.equal((await send(ctx(), readOnly, file([item('x', 'x')]))).status, 403);
  });

  it('gives every hostile line a result of its own, and never stops short of the end', async () => {
    const t = await ctx().createTenant();
    const ops = fc.constantFrom('create', 'patch', 'upsert', 'CREATE', '', 1, null);
    const resources = fc.constantFrom(
      'item',
      'buyer',
      'price_list',
      'order',
      'invoice',
      'acknowledgement',
      'shipment',
      'webhook',
      '__proto__',
      7,
    );
    const reference = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.record(
        { $ref: fc.string({ maxLength: 4 }), variant: fc.oneof(fc.integer(), fc.string({ maxLength: 3 })) },
        { requiredKeys: ['$ref'] },
      ),
    );
    const line = fc.oneof(
      fc.string({ maxLength: 60 }).filter((text) => !text.includes('\n') && !text.includes('\r')),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      fc
        .record(
          {
            op: ops,
            resource: resources,
            ref: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
            id: fc.option(reference, { nil: undefined }),
            buyerId: fc.option(reference, { nil: undefined }),
            orderId: fc.option(reference, { nil: undefined }),
            data: fc.oneof(
              fc.jsonValue({ maxDepth: 3 }),
              fc.record(
                {
                  item: fc.record({ name: fc.string({ maxLength: 5 }) }),
                  variants: fc.jsonValue({ maxDepth: 2 }),
                  x: reference,
                },
                { requiredKeys: [] },
              ),
            ),
          },
          { requiredKeys: ['op', 'resource'] },
        )
        .map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 25 }), async (lines) => {
        const posted = await send(ctx(), t, lines.join('\n'));
        if (lines.every((l) => l === '')) return;
        assert.equal(posted.status, 202, JSON.stringify(posted.body));
        const { imp, results } = await finished(ctx(), t, posted.body.id);
        assert.equal(imp.state, 'COMPLETED');
        assert.equal(imp.linesDone, imp.lines);
        const written = lines
          .map((l, i) => [l, i + 1] as const)
          .filter(([l]) => l.trim() !== '')
          .map(([, n]) => n);
        assert.deepEqual(
          results.map((r) => r.line),
          written,
          'one result for each line with something on it',
        );
        for (const r of results) {
          if (r.outcome === 'failed')
            assert.ok(r.error.errorCode !== 'INTERNAL_ERROR' && r.error.message, JSON.stringify(r));
        }
      }),
      { numRuns: 15 },
    );
  });

  it('refuses text that cannot be stored as sent (a NUL, a lone surrogate) as the single call does, on both backends', async () => {
    const t = await ctx().createTenant();
    const single = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Tea\u0000' }, variants: [{ variantName: 'One', currency: 'AUD', price: 1 }] },
    });
    assert.equal(single.status, 400);
    const lines = [
      item('Tea\u0000', 'nul-name'),
      item('Lone \ud800', 'surrogate-name'),
      item('Fine', 'fine'),
      item('Ref', 'a\u0000b'),
      item('Ref', '\ud800'),
      item('Ref too', '\udfff'),
      { op: 'create', resource: 'order', buyerId: 'a\u0000b', data: { orderItems: [] } },
      { op: 'patch', resource: 'item', id: '\ud800', data: { item: { name: 'x' } } },
    ];
    const posted = await send(ctx(), t, file(lines));
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(imp.counts, { created: 1, updated: 0, unchanged: 0, failed: 7 });
    const errors = results.map(
      (r) => r.error && { code: r.error.errorCode, message: r.error.message, fields: r.error.fieldErrors },
    );
    assert.deepEqual(errors[0], {
      code: single.body.errorCode,
      message: single.body.message,
      fields: single.body.fieldErrors,
    });
    const surrogate = 'Must be valid Unicode text: a lone UTF-16 surrogate was sent';
    const nul = 'Must not contain the NUL character (\\u0000)';
    assert.equal(errors[1].fields['item.name'], surrogate);
    assert.equal(errors[2], undefined);
    assert.deepEqual(
      errors.slice(3).map((e) => e.fields),
      [{ ref: nul }, { ref: surrogate }, { ref: surrogate }, { buyerId: nul }, { id: surrogate }],
    );
    // Each failure names the line's ref, so the caller can match it; a ref that cannot be stored is null.
    assert.deepEqual(
      results.map((r) => r.ref),
      ['nul-name', 'surrogate-name', 'fine', null, null, null, null, null],
    );
  });

  it('names the ref of a line refused before it was applied: a bad shape, a forbidden key, a NUL in its data', async () => {
    const t = await ctx().createTenant();
    const body = [
      JSON.stringify({ op: 'create', resource: 'buyer', ref: 'no-name', data: { buyer: {} } }),
      '{"op":"create","resource":"buyer","ref":"proto","data":{"buyer":{"name":"x","__proto__":{"a":1}}}}',
      JSON.stringify({ op: 'create', resource: 'buyer', ref: 'nul', data: { buyer: { name: 'a\u0000b' } } }),
      '{"op":"create","resource":"buyer","ref":"broken",',
      JSON.stringify({ op: 'create', resource: 'buyer', ref: 'ok', data: { buyer: { name: 'Fine' } } }),
    ].join('\n');
    const posted = await send(ctx(), t, body);
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const { results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(
      results.map((r) => [r.ref, r.outcome]),
      [
        ['no-name', 'failed'],
        ['proto', 'failed'],
        ['nul', 'failed'],
        [null, 'failed'],
        ['ok', 'created'],
      ],
    );
  });

  it('fails a line whose bytes are not UTF-8 as a single call refuses such a body, and stores nothing of it', async () => {
    const t = await ctx().createTenant();
    const body = Buffer.concat([
      Buffer.from(`${JSON.stringify(item('Good', 'good'))}\n`),
      // "Caf\xe9" in Latin-1: not UTF-8.
      Buffer.from(JSON.stringify(item('Caf#', 'latin1')).replace('#', '\u0000'), 'utf8').map((b) =>
        b === 0 ? 0xe9 : b,
      ),
      Buffer.from(`\n${JSON.stringify(item('Also good', 'also'))}\n`),
    ]);
    const posted = await ctx().app.inject({
      method: 'POST',
      url: '/api/v1/imports',
      headers: { ...t.headers, ...NDJSON },
      payload: body,
    });
    assert.equal(posted.statusCode, 202, posted.body);
    const { imp, results } = await finished(ctx(), t, JSON.parse(posted.body).id);
    assert.deepEqual(imp.counts, { created: 2, updated: 0, unchanged: 0, failed: 1 });
    assert.equal(results[1].error.errorCode, 'VALIDATION_ERROR');
    assert.deepEqual(results[1].error.fieldErrors, { '(root)': 'The line is not valid UTF-8' });
    const names = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.deepEqual(names.body.items.map((i: { name: string }) => i.name).sort(), ['Also good', 'Good']);
  });

  it('fails a line that begins with a NUL as not JSON, whatever follows it', async () => {
    const t = await ctx().createTenant();
    const body = `${JSON.stringify(item('Good', 'good'))}\n\u0000too long\n\u0000not utf-8\n\u0000{}\n`;
    const posted = await send(ctx(), t, body);
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(imp.counts, { created: 1, updated: 0, unchanged: 0, failed: 3 });
    for (const result of results.slice(1))
      assert.deepEqual(result.error.fieldErrors, { '(root)': 'The line is not valid JSON' }, JSON.stringify(result));
  });

  it('reads a line as the single call reads a body: a byte order mark before it skipped, no __proto__ or constructor.prototype', async () => {
    const t = await ctx().createTenant();
    const variants = [{ variantName: 'One', currency: 'AUD', price: 1 }];
    const poisoned = `{"item":{"name":"Plain"},"variants":${JSON.stringify(variants)},"__proto__":{"item":{"name":"Sneaky"}}}`;
    const single = await ctx().request('POST', '/api/v1/items', {
      as: t,
      body: poisoned,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(single.status, 400);
    const viaConstructor = `{"item":{"name":"Ctor","constructor":{"prototype":{"name":"x"}}},"variants":${JSON.stringify(variants)}}`;
    const lines = [
      `\ufeff${JSON.stringify(item('First', 'first'))}`,
      `{"op":"create","resource":"item","ref":"proto","data":${poisoned}}`,
      `{"op":"create","resource":"item","ref":"ctor","data":${viaConstructor}}`,
      `{"op":"create","resource":"item","ref":"envelope","data":{"item":{"name":"Env"},"variants":${JSON.stringify(variants)}},"__proto__":{"ref":"x"}}`,
      // Files joined with `cat` keep each one's mark.
      `\ufeff${JSON.stringify(item('Joined', 'joined'))}`,
      JSON.stringify(item('Last', 'last')),
    ];
    const posted = await send(ctx(), t, file(lines));
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const { imp, results } = await finished(ctx(), t, posted.body.id);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['created', 'failed', 'failed', 'failed', 'created', 'created'],
    );
    for (const r of results.slice(1, 4)) {
      assert.deepEqual(r.error, { errorCode: single.body.errorCode, message: single.body.message });
    }
    assert.equal(imp.counts.created, 3);
    const names = await ctx().request('GET', '/api/v1/items?limit=100', { as: t });
    assert.deepEqual(names.body.items.map((i: { name: string }) => i.name).sort(), ['First', 'Joined', 'Last']);
  });

  it('purges imports 30 days after they finish, with their results', async () => {
    const t = await ctx().createTenant();
    const posted = await send(ctx(), t, file([item('Old', 'old')]));
    await finished(ctx(), t, posted.body.id);
    await purgeImportsBefore(
      ctx().db,
      new Date(Date.now() - IMPORT_RETENTION_DAYS * 86_400_000).toISOString(),
      Date.now(),
    );
    assert.equal((await ctx().request('GET', `/api/v1/imports/${posted.body.id}`, { as: t })).status, 200);
    await purgeImportsBefore(ctx().db, new Date(Date.now() + 1000).toISOString(), Date.now());
    assert.equal((await ctx().request('GET', `/api/v1/imports/${posted.body.id}`, { as: t })).status, 404);
    const left = await ctx()
      .db.selectFrom('import_results')
      .select('line')
      .where('import_id', '=', posted.body.id)
      .execute();
    assert.deepEqual(left, []);
  });
});

describeEachBackend('bulk import: the shared security cases', (ctx) => {
  const line = `${JSON.stringify({ op: 'create', resource: 'buyer', data: { buyer: { name: 'x' } } })}\n`;
  const made = async (c: TestContext, owner: Tenant) => (await send(c, owner, line)).body.id as string;
  securityCases(ctx, { method: 'POST', url: () => '/api/v1/imports', body: line, crossTenant: false });
  securityCases(ctx, { method: 'GET', url: () => '/api/v1/imports', crossTenant: false });
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/imports/${await made(c, owner)}` });
  securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/imports/${await made(c, owner)}/results` });
});

describeEachBackend(
  'bulk import limits',
  (ctx) => {
    it('refuses a file larger than IMPORT_MAX_BYTES with 413, and keeps nothing of it', async () => {
      const t = await ctx().createTenant();
      const body = file(Array.from({ length: 100 }, (_, i) => item(`Item ${i}`, `i${i}`)));
      const r = await send(ctx(), t, body);
      assert.equal(r.status, 413);
      assert.match(r.body.message, /IMPORT_MAX_BYTES/);
      const chunks = await ctx().db.selectFrom('import_chunks').select('import_id').execute();
      assert.deepEqual(chunks, []);
    });
  },
  { config: { imports: { maxBytes: 4096, concurrency: 2, leaseMs: 30_000 } } },
);
