import type { Fixtures } from './fixtures.ts';
import { timed } from './latency.ts';

/** What the list benchmark reads and writes to reach cases the demo's data does not have (bench/lists.ts). */

/**
 * Changes the oldest live order (a property of the benchmark's own), so that its updatedAt is now;
 * false when there is none. The change stays in the database: a reused one keeps it, as it keeps
 * the other scenarios' writes. Read from the last page of 100: `page` is at most 1,000,000, which
 * a page of one would pass on a reused database of 1M orders and the orders the writes add.
 */
export async function changeOldestOrder(base: string, f: Fixtures): Promise<boolean> {
  const { body: { total } } = await timed(base, '/api/v1/orders?limit=1', f.headers);
  if (total === 0) return false;
  const { body: { items } } = await timed(base, `/api/v1/orders?limit=100&page=${Math.ceil(total / 100)}`, f.headers);
  const oldest = items.at(-1);
  const res = await fetch(`${base}/api/v1/orders/${oldest.id}`, {
    method: 'PATCH',
    headers: { ...f.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ order: { properties: { bench: { changedAt: new Date().toISOString() } } } }),
  });
  if (res.status !== 200) throw new Error(`PATCH the oldest order: ${res.status} ${(await res.text()).slice(0, 200)}`);
  return true;
}

/** Up to 200 order ids from pages spread over the whole list. */
export async function spreadIds(base: string, f: Fixtures, orders: number): Promise<string[]> {
  const pages = Math.max(1, Math.ceil(orders / 100));
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const page = Math.max(1, Math.round((pages * i) / 10));
    const { body } = await timed(base, `/api/v1/orders?limit=100&page=${page}`, f.headers);
    ids.push(...(body.items as Array<{ id: string }>).slice(0, 20).map((o) => o.id));
  }
  return ids;
}

/** A path only the oldest orders have (markOldest). */
export const LEGACY_PATH = 'benchLegacy.id';

/**
 * Gives the `n` oldest live orders a path of the benchmark's own (LEGACY_PATH), as an integration
 * back-filling an old system's ids does, unless as many orders (deleted ones too) have it already:
 * a reused database keeps it. The demo spreads its paths evenly over time, so no other case has a
 * path far from the newest end. False, and nothing changed, when the business holds no more than
 * `n` live orders (no order would lack the path). Eight PATCHes at a time, from the last page of
 * 100 backwards.
 */
export async function markOldest(base: string, f: Fixtures, n: number): Promise<boolean> {
  const { body: { total } } = await timed(base, '/api/v1/orders?limit=1', f.headers);
  if (total <= n) {
    console.error(`lists: ${total} orders, not more than ${n}: the cases of a path only the oldest orders have are left out`);
    return false;
  }
  const { body: { total: marked } } = await timed(base, `/api/v1/orders?propertyPath=${LEGACY_PATH}&includeDeleted=true&limit=1`, f.headers);
  if (marked >= n) return true;
  const ids: string[] = [];
  for (let page = Math.ceil(total / 100); page >= 1 && ids.length < n; page--) {
    const { body: { items } } = await timed(base, `/api/v1/orders?limit=100&page=${page}`, f.headers);
    ids.push(...(items as Array<{ id: string }>).map((o) => o.id).reverse().slice(0, n - ids.length));
  }
  const patch = async (id: string, i: number) => {
    const res = await fetch(`${base}/api/v1/orders/${id}`, {
      method: 'PATCH',
      headers: { ...f.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ order: { properties: { benchLegacy: { id: i } } } }),
    });
    if (res.status !== 200) throw new Error(`PATCH an old order: ${res.status} ${(await res.text()).slice(0, 200)}`);
  };
  for (let i = 0; i < ids.length; i += 8) await Promise.all(ids.slice(i, i + 8).map((id, j) => patch(id, i + j)));
  console.error(`lists: gave the ${ids.length} oldest orders ${LEGACY_PATH}`);
  return true;
}
