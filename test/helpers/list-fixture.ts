import assert from 'node:assert/strict';
import type { ListOrdersOptions } from '../../src/orders/read-model/plan.ts';
import { toIso } from '../../src/lib/time.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import type { Tenant, TestContext } from './context.ts';
import { createFixture, createOrder, patchOrder } from './orders.ts';

/**
 * The order list's brute-force fixture (test/orders/list-every-filter-combination.test.ts, test/orders/list-with-deleted.test.ts):
 * orders pinned on both sides of every filter's boundary, deleted ones among them, and the
 * expected ids of any list computed in JavaScript from a raw `select *`.
 */

export const CREATED_SINCE = '2025-02-01T00:00:00.000Z';
export const UPDATED_SINCE = '2025-03-01T12:00:00.000Z';
// Another time on the same day, so that the per-day counts and the count of its own day both matter.
export const MODIFIED_SINCE = '2025-03-01T18:00:00.000Z';
export const PATH = ['erp', 'no'];
/** Options with no filter set. */
export const NO_FILTER = {
  includeDeleted: false,
  phase: undefined,
  status: undefined,
  createdSince: undefined,
  updatedSince: undefined,
  modifiedSince: undefined,
};

type Pinned = {
  created: string;
  updated: string;
  phase: string;
  status: string;
  properties?: Record<string, unknown>;
  deleted?: 'api' | 'direct';
};

/** Orders on both sides of every window boundary (at it: out; 1 ms after: in), with every kind of property value. */
const ORDERS: Pinned[] = [
  {
    created: '2024-12-01T00:00:00.000Z',
    updated: '2024-12-01T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: true } },
  },
  {
    created: '2025-01-10T00:00:00.000Z',
    updated: '2025-01-10T00:00:00.000Z',
    phase: 'PENDING',
    status: 'UNASSIGNED',
    properties: { erp: { no: 456 } },
  },
  {
    created: '2025-01-15T00:00:00.000Z',
    updated: '2025-03-07T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: '456' } },
  },
  {
    created: '2025-01-20T00:00:00.000Z',
    updated: UPDATED_SINCE,
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: '456' } },
  },
  {
    created: '2025-01-05T00:00:00.000Z',
    updated: '2025-03-10T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 456 } },
    deleted: 'direct',
  },
  {
    created: CREATED_SINCE,
    updated: '2025-03-01T12:00:00.001Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: null } },
  },
  {
    created: '2025-02-01T00:00:00.001Z',
    updated: '2025-02-01T00:00:00.001Z',
    phase: 'ACTIVE',
    status: 'UNASSIGNED',
    properties: { erp: { no: 457 } },
  },
  {
    created: '2025-02-10T00:00:00.000Z',
    updated: MODIFIED_SINCE,
    phase: 'PENDING',
    status: 'ACCEPTED',
    properties: { erp: { no: { n: 456 } } },
  },
  {
    created: '2025-02-10T00:00:00.000Z',
    updated: '2025-03-01T18:00:00.001Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 456 } },
  },
  {
    created: '2025-02-20T00:00:00.000Z',
    updated: '2025-03-01T06:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { other: { x: 1 } },
  },
  { created: UPDATED_SINCE, updated: '2025-03-03T00:00:00.000Z', phase: 'ACTIVE', status: 'ACCEPTED' },
  {
    created: '2025-03-01T12:00:00.001Z',
    updated: '2025-03-01T12:00:00.001Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 456 } },
  },
  {
    created: '2025-03-02T00:00:00.000Z',
    updated: '2025-03-02T00:00:00.000Z',
    phase: 'PENDING',
    status: 'UNASSIGNED',
    properties: { erp: { no: '456' } },
    deleted: 'api',
  },
  {
    created: '2025-03-02T00:00:00.000Z',
    updated: '2025-03-05T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 'x' } },
    deleted: 'api',
  },
  {
    created: '2025-03-02T00:00:00.000Z',
    updated: '2025-03-02T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 456 } },
  },
  {
    created: '2025-03-04T00:00:00.000Z',
    updated: '2025-03-04T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    properties: { erp: { no: 456 } },
  },
  {
    created: '2025-03-06T00:00:00.000Z',
    updated: '2025-03-06T00:00:00.000Z',
    phase: 'DRAFT',
    status: 'UNASSIGNED',
    properties: { erp: {} },
  },
  {
    created: '2025-03-08T00:00:00.000Z',
    updated: '2025-03-08T00:00:00.000Z',
    phase: 'ACTIVE',
    status: 'ACCEPTED',
    deleted: 'direct',
  },
];

export async function createOrders(ctx: TestContext, t: Tenant) {
  const f = await createFixture(ctx, t);
  for (const o of ORDERS) {
    const { id } = await createOrder(ctx, t, f, {
      phase: o.phase,
      status: o.status,
      ...(o.properties ? { properties: o.properties } : {}),
    });
    if (o.deleted === 'api') assert.equal((await ctx.request('DELETE', `/api/v1/orders/${id}`, { as: t })).status, 204);
    // Deleted as a load written around the repositories would (its phase kept), then counted by the rebuild.
    const deleted = o.deleted === 'direct' ? { deleted_at: o.updated } : {};
    await ctx.db
      .updateTable('orders')
      .set({ created_at: o.created, updated_at: o.updated, ...deleted })
      .where('id', '=', id)
      .execute();
  }
  await rebuildOrderProjections(ctx.db, t.businessId);
  // Then through the API, so that the maintained counts (not only a rebuild) are what the lists read:
  // an older order soft-deleted, a live order PATCHed to phase DELETED (still live), and an order
  // created and deleted today.
  const ids = (
    await ctx.db
      .selectFrom('orders')
      .select(['id', 'created_at'])
      .where('business_id', '=', t.businessId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .execute()
  ).map((r) => r.id);
  assert.equal((await ctx.request('DELETE', `/api/v1/orders/${ids[2]}`, { as: t })).status, 204);
  assert.equal((await patchOrder(ctx, t, ids[3], { order: { phase: 'DELETED' } })).status, 200);
  const today = await createOrder(ctx, t, f, { phase: 'ACTIVE', status: 'ACCEPTED', properties: { erp: { no: 456 } } });
  assert.equal((await ctx.request('DELETE', `/api/v1/orders/${today.id}`, { as: t })).status, 204);
}

/** The JSON value at a path, or undefined when absent (never stepping into arrays). */
function valueAt(properties: unknown, segments: string[]): unknown {
  let value = typeof properties === 'string' ? JSON.parse(properties) : properties;
  for (const s of segments) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, s))
      return undefined;
    value = value[s];
  }
  return value;
}

/** A propertyValue matches a JSON string, number or boolean scalar with that text. */
const matches = (value: unknown, text: string) =>
  (typeof value === 'string' && value === text) ||
  (typeof value === 'number' && value === Number(text)) ||
  (typeof value === 'boolean' && String(value) === text);

/** Brute force: every order of the business from a raw `select *`, filtered and sorted in JS. */
export async function expectedIds(ctx: TestContext, t: Tenant, o: ListOrdersOptions): Promise<string[]> {
  const rows = await ctx.db.selectFrom('orders').selectAll().where('business_id', '=', t.businessId).execute();
  const since = [o.updatedSince, o.modifiedSince]
    .filter((s) => s !== undefined)
    .sort()
    .at(-1);
  return rows
    .filter((r) => {
      if (!o.includeDeleted && r.deleted_at !== null) return false;
      if (o.phase && r.phase !== o.phase) return false;
      if (o.status && r.status !== o.status) return false;
      if (o.createdSince && !(toIso(r.created_at) > o.createdSince)) return false;
      if (since && !(toIso(r.updated_at) > since)) return false;
      if (o.property) {
        const value = valueAt(r.properties, o.property.segments);
        if (o.property.value !== undefined) return matches(value, o.property.value);
        return (value !== undefined) === o.property.exists;
      }
      return true;
    })
    .sort((a, b) =>
      toIso(a.created_at) === toIso(b.created_at)
        ? a.id < b.id
          ? 1
          : -1
        : toIso(a.created_at) < toIso(b.created_at)
          ? 1
          : -1,
    )
    .map((r) => r.id);
}
