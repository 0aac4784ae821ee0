import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/types.ts';
import { toIso } from '../../src/lib/time.ts';
import { DEFAULT_LIST_TUNING, rebuildOrderProjections, type ListTuning } from '../../src/orders/read-model/index.ts';
import type { Tenant, TestContext } from './context.ts';

/** A catalogue and a buyer to order with: variants priced 10, 2.5 and 0.1 (AUD), and their default-list entries. */
export interface OrderFixture {
  buyerId: string;
  partnershipId: string;
  variantIds: string[];
  entryIds: string[];
}

export async function createFixture(
  ctx: TestContext,
  as: Tenant,
  variants?: Array<Record<string, unknown>>,
): Promise<OrderFixture> {
  const item = await ctx.request('POST', '/api/v1/items', {
    as,
    body: {
      item: { name: `Widget ${Math.random()}` },
      variants: variants ?? [
        { variantName: 'Small', sku: 'W-S', currency: 'AUD', price: 10, cost: 4, unitOfMeasure: 'kg' },
        { variantName: 'Large', currency: 'AUD', price: 2.5 },
        { variantName: 'Tiny', currency: 'AUD', price: 0.1, cost: 0.05 },
      ],
    },
  });
  assert.equal(item.status, 201, JSON.stringify(item.body));
  const buyer = await ctx.request('POST', '/api/v1/buyers', { as, body: { buyer: { name: 'Acme Foods' } } });
  assert.equal(buyer.status, 201, JSON.stringify(buyer.body));
  const variantIds: string[] = item.body.variantIds;
  const rows = await ctx.db
    .selectFrom('item_list_entries')
    .select(['id', 'item_variant_id'])
    .where('business_id', '=', as.businessId)
    .where('item_variant_id', 'in', variantIds)
    .execute();
  const entryIds = variantIds.map((v) => rows.find((r) => r.item_variant_id === v)!.id);
  return { buyerId: buyer.body.id, partnershipId: buyer.body.partnershipId, variantIds, entryIds };
}

export const DELIVERY = '2030-01-15T10:30:00.000Z';

export function postOrder(
  ctx: TestContext,
  as: Tenant,
  f: OrderFixture,
  body: Record<string, unknown> = {},
  headers?: Record<string, string>,
) {
  return ctx.request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
    as,
    headers,
    body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 2 }], ...body },
  });
}

/** Creates an order and returns its body; fails the test when creation does not give 201. */
export async function createOrder(ctx: TestContext, as: Tenant, f: OrderFixture, body: Record<string, unknown> = {}) {
  const res = await postOrder(ctx, as, f, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

export const patchOrder = (ctx: TestContext, as: Tenant, id: string, body: unknown, headers?: Record<string, string>) =>
  ctx.request('PATCH', `/api/v1/orders/${id}`, { as, body, headers });

export const getOrder = (ctx: TestContext, as: Tenant, id: string) =>
  ctx.request('GET', `/api/v1/orders/${id}`, { as });

export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * The maintained `order_change_counts` of a business against a brute-force count per UTC day,
 * and the modifiedSince/updatedSince totals the list gives against a brute-force count, for times
 * at, just before and just after every order's updatedAt and at the edges of its day.
 */
export async function assertChangeTotalsExact(ctx: TestContext, as: Tenant): Promise<void> {
  const { rows, live } = await assertChangeCountsExact(ctx.db, as.businessId);

  const times = new Set<string>(['2000-01-01T00:00:00.000Z']);
  for (const u of rows.map((r) => toIso(r.updated_at))) {
    const ms = Date.parse(u);
    for (const t of [
      ms - 1,
      ms,
      ms + 1,
      Date.parse(`${u.slice(0, 10)}T00:00:00.000Z`),
      Date.parse(`${u.slice(0, 10)}T23:59:59.999Z`),
    ]) {
      times.add(new Date(t).toISOString());
    }
  }
  for (const since of times) {
    const expected = live.filter((u) => u > since).length;
    for (const name of ['modifiedSince', 'updatedSince']) {
      const res = await ctx.request('GET', `/api/v1/orders?limit=1&${name}=${since}`, { as });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.total, expected, `${name}=${since}`);
    }
  }
}

/** `order_change_counts` of a business against a brute-force count of its live orders per UTC day of updatedAt. */
export async function assertChangeCountsExact(db: Kysely<Database>, businessId: string) {
  const rows = await db
    .selectFrom('orders')
    .select(['updated_at', 'deleted_at'])
    .where('business_id', '=', businessId)
    .execute();
  const live = rows.filter((r) => r.deleted_at === null).map((r) => toIso(r.updated_at));
  const perDay = new Map<string, number>();
  for (const u of live) perDay.set(u.slice(0, 10), (perDay.get(u.slice(0, 10)) ?? 0) + 1);
  const counted = await db
    .selectFrom('order_change_counts')
    .select(['day', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy('day')
    .having(sql`sum(n)`, '<>', 0)
    .execute();
  assert.deepEqual(
    Object.fromEntries(counted.map((c) => [c.day, Number(c.n)])),
    Object.fromEntries(perDay),
    'order_change_counts per day',
  );
  return { rows, live };
}

/**
 * The list plan's size thresholds of every app the tests make (test/helpers/context.ts), and of
 * their direct calls of listOrders: a test changes them for a while to take another plan.
 */
export const testListTuning: { -readonly [K in keyof ListTuning]: ListTuning[K] } = { ...DEFAULT_LIST_TUNING };

/** Runs `read` with the tests' list plan thresholds changed, then puts them back. */
export async function withListTuning<T>(tuning: Partial<ListTuning>, read: () => Promise<T>): Promise<T> {
  const saved = { ...testListTuning };
  Object.assign(testListTuning, tuning);
  try {
    return await read();
  } finally {
    Object.assign(testListTuning, saved);
  }
}

/** Runs `read` with the created-day page walker taking every page by day, however shallow. */
export const walkingEveryDay = <T>(read: () => Promise<T>) => withListTuning({ shallowRows: 0 }, read);

/** Every derived order table of a business, summed over shards, in a comparable order. */
export async function projections(db: Kysely<Database>, businessId: string) {
  const counts = await db
    .selectFrom('order_counts')
    .select(['phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['phase', 'status'])
    .orderBy('phase')
    .orderBy('status')
    .execute();
  const days = await db
    .selectFrom('order_change_counts')
    .select(['day', 'created_day', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['day', 'created_day'])
    .orderBy('day')
    .orderBy('created_day')
    .execute();
  const deletedDays = await db
    .selectFrom('order_deleted_change_counts')
    .select(['day', 'created_day', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['day', 'created_day'])
    .orderBy('day')
    .orderBy('created_day')
    .execute();
  const created = await db
    .selectFrom('order_created_counts')
    .select(['day', 'phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['day', 'phase', 'status'])
    .orderBy('day')
    .orderBy('phase')
    .orderBy('status')
    .execute();
  const deleted = await db
    .selectFrom('order_deleted_counts')
    .select(['day', 'phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['day', 'phase', 'status'])
    .orderBy('day')
    .orderBy('phase')
    .orderBy('status')
    .execute();
  const paths = await db
    .selectFrom('order_property_counts')
    .select(['path', 'day', 'phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['path', 'day', 'phase', 'status'])
    .orderBy('path')
    .orderBy('day')
    .orderBy('phase')
    .orderBy('status')
    .execute();
  const rows = await db
    .selectFrom('order_properties')
    .select(['order_id', 'path', 'value'])
    .where('business_id', '=', businessId)
    .orderBy('order_id')
    .orderBy('path')
    .execute();
  const deletedPaths = await db
    .selectFrom('order_deleted_property_counts')
    .select(['path', 'day', 'phase', 'status', sql<string>`sum(n)`.as('n')])
    .where('business_id', '=', businessId)
    .groupBy(['path', 'day', 'phase', 'status'])
    .orderBy('path')
    .orderBy('day')
    .orderBy('phase')
    .orderBy('status')
    .execute();
  const deletedRows = await db
    .selectFrom('order_deleted_properties')
    .select(['order_id', 'path', 'value'])
    .where('business_id', '=', businessId)
    .orderBy('order_id')
    .orderBy('path')
    .execute();
  // Rows whose count went to zero are kept by the upkeep and not made by a rebuild: the same answer.
  const nonZero = <T extends { n: string }>(list: T[]) =>
    list.filter((r) => Number(r.n) !== 0).map((r) => ({ ...r, n: Number(r.n) }));
  return {
    counts: nonZero(counts),
    days: nonZero(days),
    created: nonZero(created),
    deleted: nonZero(deleted),
    paths: nonZero(paths),
    rows,
    deletedPaths: nonZero(deletedPaths),
    deletedRows,
    deletedDays: nonZero(deletedDays),
  };
}

/** The maintained tables, then a rebuild of them: the two must be the same. */
export async function assertMatchesRebuild(db: Kysely<Database>, businessId: string) {
  const maintained = await projections(db, businessId);
  await rebuildOrderProjections(db, businessId);
  assert.deepEqual(maintained, await projections(db, businessId));
  return maintained;
}
