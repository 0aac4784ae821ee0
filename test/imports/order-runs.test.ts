import assert from 'node:assert/strict';
import { it } from 'node:test';
import { findBuyerPartnership } from '../../src/buyers/repository.ts';
import { createsMany } from '../../src/imports/operations.ts';
import { parseLine } from '../../src/imports/lines.ts';
import { ApiError } from '../../src/lib/errors.ts';
import { createOrders } from '../../src/orders/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { importNow } from '../helpers/imports.ts';
import { createFixture, DELIVERY, projections, type OrderFixture } from '../helpers/orders.ts';

/** A business's catalogue: an AUD item with three variants and its buyer, and a USD item with another buyer. */
async function catalogue(c: TestContext, t: Tenant) {
  const aud = await createFixture(c, t);
  const usd = await createFixture(c, t, [{ variantName: 'Dollar', currency: 'USD', price: 3 }]);
  return { aud, usd };
}

/** Order bodies and their buyers, good and bad: each bad one is refused by the single call. */
function orders({ aud, usd }: { aud: OrderFixture; usd: OrderFixture }) {
  const line = (buyerId: string | undefined, body: Record<string, unknown>) => ({
    buyerId,
    body: { expectedDeliveryAt: DELIVERY, ...body },
  });
  const [small, large, tiny] = aud.variantIds;
  return [
    line(aud.buyerId, { orderItems: [{ itemVariantId: small, quantity: 2 }], properties: { erp: { no: 1 } } }),
    line(aud.buyerId, { orderItems: [{ itemVariantId: 'var_00000000000000000000000000', quantity: 1 }] }),
    line(aud.buyerId, {
      phase: 'ACTIVE',
      status: 'ACCEPTED',
      internalReference: 'MY-1',
      externalReference: 'PO-7',
      orderItems: [
        { itemVariantId: large, quantity: 3, properties: { colour: 'red' } },
        { itemListEntryId: aud.entryIds[2], quantity: 1, price: 7.25, lineNumber: 9 },
      ],
    }),
    line('phm_00000000000000000000000000', { orderItems: [{ itemVariantId: small, quantity: 1 }] }),
    line(aud.buyerId, {
      orderItems: [
        { itemVariantId: small, quantity: 1 },
        { itemListEntryId: aud.entryIds[0], quantity: 1 },
      ],
    }),
    line(aud.buyerId, {
      orderItems: [
        { itemVariantId: small, quantity: 1 },
        { itemVariantId: usd.variantIds[0], quantity: 1 },
      ],
    }),
    line(usd.buyerId, { currency: 'AUD', orderItems: [{ itemVariantId: usd.variantIds[0], quantity: 4 }] }),
    line(usd.buyerId, { notes: 'USD', orderItems: [{ itemVariantId: usd.variantIds[0], quantity: 4, cost: 1 }] }),
    line(aud.buyerId, { orderItems: [{ itemVariantId: tiny, itemListEntryId: aud.entryIds[2], quantity: 1 }] }),
    line(aud.buyerId, {
      properties: { erp: { no: 2 }, tags: ['x'] },
      orderItems: [{ itemVariantId: tiny, quantity: 10, unitOfMeasure: 'box' }],
    }),
  ];
}

/** Ids as the n-th id met, times as a mark: two businesses' equal records then read the same. */
function comparable() {
  const aliases = new Map<string, string>();
  const walk = (value: unknown, key = ''): unknown => {
    if (Array.isArray(value)) return value.map((v) => walk(v));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    if (typeof value !== 'string') return value;
    if (key === 'createdAt' || key === 'updatedAt') return 'time';
    if (!/^[a-z]{2,4}_[0-9a-z]{26}$/.test(value)) return value;
    if (!aliases.has(value)) aliases.set(value, `id${aliases.size}`);
    return aliases.get(value);
  };
  return walk;
}

const createdEvents = async (c: TestContext, t: Tenant) =>
  (await c.request('GET', '/api/v1/events?after=0&limit=1000&types=order.created', { as: t })).body.items.map(
    (e: any) => e.data.object,
  );

const TOTALS = ['', 'phase=ACTIVE', 'status=ACCEPTED', 'propertyPath=erp.no', 'propertyPath=erp.no&propertyValue=2'];

/**
 * Bulk import (issue 67): a run of order create lines is stored together, one multi-row statement
 * per table, and reads exactly as the same orders created one by one with the single call.
 */
describeEachBackend('bulk import: runs of order lines', (ctx) => {
  it('fails each bad line alone with the single call’s error, and stores the good ones as the single call does', async () => {
    const [imported, single] = [await ctx().createTenant(), await ctx().createTenant()];
    const lines = orders(await catalogue(ctx(), imported));
    const imp = await importNow(ctx(), imported, [
      { op: 'create', resource: 'buyer', ref: 'b', data: { buyer: { name: 'Referenced' } } },
      ...lines.map(({ buyerId, body }) => ({ op: 'create', resource: 'order', buyerId, data: body })),
      // A line naming the buyer line's ref, and one without a buyer: the single call's path needs one.
      { op: 'create', resource: 'order', buyerId: { $ref: 'b' }, data: lines[0].body },
      { op: 'create', resource: 'order', data: lines[0].body },
    ]);
    const results = (await ctx().request('GET', `/api/v1/imports/${imp.id}/results`, { as: imported })).body
      .split('\n')
      .filter((l: string) => l !== '')
      .map((l: string) => JSON.parse(l));

    const answers: Array<{ status: number; body: any }> = [];
    const singleLines = orders(await catalogue(ctx(), single));
    await ctx().request('POST', '/api/v1/buyers', { as: single, body: { buyer: { name: 'Referenced' } } });
    for (const { buyerId, body } of singleLines)
      answers.push(await ctx().request('POST', `/api/v1/buyers/${buyerId}/orders`, { as: single, body }));
    assert.deepEqual(
      answers.map((a) => a.status),
      [201, 400, 201, 404, 400, 400, 400, 201, 400, 201],
    );
    const buyer = (await ctx().request('GET', '/api/v1/buyers?limit=10', { as: single })).body.items.find(
      (b: any) => b.name === 'Referenced',
    );
    answers.push(
      await ctx().request('POST', `/api/v1/buyers/${buyer.id}/orders`, { as: single, body: singleLines[0].body }),
    );

    // Each bad line has the single call's error; each good line the order the single call made.
    for (const [i, answer] of answers.entries()) {
      const result = results[i + 1];
      if (answer.status !== 201) {
        assert.equal(result.outcome, 'failed', `line ${i + 2}`);
        const { errorCode, message, fieldErrors } = answer.body;
        assert.deepEqual(
          result.error,
          { errorCode, message, ...(fieldErrors ? { fieldErrors } : {}) },
          `line ${i + 2}`,
        );
      } else assert.equal(result.outcome, 'created', `line ${i + 2}: ${JSON.stringify(result)}`);
    }
    assert.deepEqual(results.at(-1).error.fieldErrors, { buyerId: 'Required: the buyer the order is for' });

    const mine = comparable();
    const theirs = comparable();
    const got = await Promise.all(
      results
        .filter((r: any) => r.outcome === 'created' && r.line > 1)
        .map(async (r: any) => (await ctx().request('GET', `/api/v1/orders/${r.id}`, { as: imported })).body),
    );
    const made = answers.filter((a) => a.status === 201).map((a) => a.body);
    assert.deepEqual(
      got.map((o) => o.internalReference),
      ['SO-000001', 'MY-1', 'SO-000002', 'SO-000003', 'SO-000004'],
    );
    assert.deepEqual(mine(got), theirs(made));
    assert.deepEqual(mine(await createdEvents(ctx(), imported)), theirs(await createdEvents(ctx(), single)));

    // The lists' totals and the derived tables they are read from, orders by their place.
    for (const query of TOTALS) {
      const total = async (t: Tenant) =>
        (await ctx().request('GET', `/api/v1/orders?limit=1&${query}`, { as: t })).body.total;
      assert.equal(await total(imported), await total(single), query);
    }
    const place = (ids: string[]) => new Map(ids.map((id, i) => [id, i]));
    const tables = async (t: Tenant, ids: Map<string, number>) => {
      const p = await projections(ctx().db, t.businessId);
      return { ...p, rows: p.rows.map((r) => ({ ...r, order_id: ids.get(r.order_id) })) };
    };
    assert.deepEqual(
      await tables(imported, place(got.map((o) => o.id))),
      await tables(single, place(made.map((o) => o.id))),
    );
  });

  it('stores N orders with one statement per table, and leaves a bad one out before writing', async () => {
    const t = await ctx().createTenant();
    const lines = orders(await catalogue(ctx(), t));
    const partnership = async (buyerId: string | undefined) =>
      (await findBuyerPartnership(ctx().db, t.businessId, buyerId!))!;
    const inputs = await Promise.all(
      [0, 1, 2, 7, 9].map(async (i) => ({
        partnership: await partnership(lines[i].buyerId),
        input: lines[i].body as any,
      })),
    );
    const statements: string[] = [];
    const writes = createWriteRunner(
      ctx().db.withPlugin({
        transformQuery: (args) => {
          const node = args.node as any;
          if (node.kind === 'InsertQueryNode') statements.push(node.into.table.identifier.name);
          return args.node;
        },
        transformResult: async (args) => args.result,
      }),
    );
    const created = await writes.run({ businessId: t.businessId, actor: SYSTEM }, (c) => createOrders(c, inputs));
    assert.deepEqual(
      created.map((r) => (r instanceof ApiError ? r.code : r.resource.internalReference)),
      ['SO-000001', 'VALIDATION_ERROR', 'MY-1', 'SO-000002', 'SO-000003'],
    );
    // One statement per table for the four orders (the SO numbers taken at once, as the references show).
    const tables = ['orders', 'order_items', 'order_properties', 'order_property_counts', 'order_counts'];
    tables.push('order_change_counts', 'order_created_counts');
    assert.deepEqual(
      tables.map((table) => statements.filter((s) => s === table).length),
      tables.map(() => 1),
      statements.join(', '),
    );
  });
  it('reads the buyers of a run of order lines with one query', async () => {
    const t = await ctx().createTenant();
    const { aud, usd } = await catalogue(ctx(), t);
    const line = (buyerId: string | undefined, variantId: string) =>
      parseLine(
        JSON.stringify({
          op: 'create',
          resource: 'order',
          ...(buyerId === undefined ? {} : { buyerId }),
          data: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: variantId, quantity: 1 }] },
        }),
      );
    const lines = [
      line(aud.buyerId, aud.variantIds[0]),
      line(usd.buyerId, usd.variantIds[0]),
      line('phm_00000000000000000000000000', aud.variantIds[0]),
      line(undefined, aud.variantIds[0]),
      line(aud.buyerId, aud.variantIds[1]),
    ];
    let buyerReads = 0;
    const writes = createWriteRunner(
      ctx().db.withPlugin({
        transformQuery: (args) => {
          if (args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node).includes('"name":"phantoms"'))
            buyerReads++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      }),
    );
    const applied = await writes.run({ businessId: t.businessId, actor: SYSTEM }, (c) =>
      createsMany(lines[0])!(c, lines),
    );
    assert.deepEqual(
      applied.map((r) => (r instanceof ApiError ? `${r.code}: ${r.message}` : r.outcome)),
      [
        'created',
        'created',
        'NOT_FOUND: Buyer not found',
        'VALIDATION_ERROR: Validation failed. Please review the highlighted fields.',
        'created',
      ],
    );
    assert.equal(buyerReads, 1);
  });
});
