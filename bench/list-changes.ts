import type { Fixtures } from './fixtures.ts';
import { timed } from './latency.ts';

/** What the list benchmark reads and writes to reach cases the demo's data does not have (bench/lists.ts). */

/** The `n` oldest live orders' ids, oldest first, of `total`: from the last page of 100 backwards (`page` is at most 1,000,000). */
async function oldestIds(base: string, f: Fixtures, total: number, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let page = Math.ceil(total / 100); page >= 1 && ids.length < n; page--) {
    const {
      body: { items },
    } = await timed(base, `/api/v1/orders?limit=100&page=${page}`, f.headers);
    ids.push(
      ...(items as Array<{ id: string }>)
        .map((o) => o.id)
        .reverse()
        .slice(0, n - ids.length),
    );
  }
  return ids;
}

/** Merges `properties` into an order's; anything but 200 stops the run. */
async function patchProperties(
  base: string,
  f: Fixtures,
  id: string,
  properties: Record<string, unknown>,
): Promise<void> {
  const res = await fetch(`${base}/api/v1/orders/${id}`, {
    method: 'PATCH',
    headers: { ...f.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ order: { properties } }),
  });
  if (res.status !== 200) throw new Error(`PATCH order ${id}: ${res.status} ${(await res.text()).slice(0, 200)}`);
}

/**
 * Changes the oldest live order (a property of the benchmark's own), so that its updatedAt is now;
 * false when there is none. The change stays in the database: a reused one keeps it, as it keeps
 * the other scenarios' writes.
 */
export async function changeOldestOrder(base: string, f: Fixtures): Promise<boolean> {
  const {
    body: { total },
  } = await timed(base, '/api/v1/orders?limit=1', f.headers);
  if (total === 0) return false;
  const [oldest] = await oldestIds(base, f, total, 1);
  await patchProperties(base, f, oldest, { bench: { changedAt: new Date().toISOString() } });
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
 * `n` live orders (no order would lack the path). Eight PATCHes at a time.
 */
export async function markOldest(base: string, f: Fixtures, n: number): Promise<boolean> {
  const {
    body: { total },
  } = await timed(base, '/api/v1/orders?limit=1', f.headers);
  if (total <= n) {
    console.error(
      `lists: ${total} orders, not more than ${n}: the cases of a path only the oldest orders have are left out`,
    );
    return false;
  }
  const {
    body: { total: marked },
  } = await timed(base, `/api/v1/orders?propertyPath=${LEGACY_PATH}&includeDeleted=true&limit=1`, f.headers);
  if (marked >= n) return true;
  const ids = await oldestIds(base, f, total, n);
  for (let i = 0; i < ids.length; i += 8)
    await Promise.all(ids.slice(i, i + 8).map((id, j) => patchProperties(base, f, id, { benchLegacy: { id: i + j } })));
  console.error(`lists: gave the ${ids.length} oldest orders ${LEGACY_PATH}`);
  return true;
}
