import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startServers,
  type Server,
  type Tenant,
} from './helpers.ts';

const ORDERS = 60;
const WRITERS = 16;
const SECONDS = Number(process.env.RELIABILITY_COMMIT_ORDER_SECONDS || 8);

/**
 * The README's integration guide, to the letter: ask for `modifiedSince=<largest updatedAt seen>`
 * with `includeDeleted=true`, page until a page is short, keep what comes. Returns how many orders
 * the poll brought.
 */
async function pollAsTheGuideSays(
  base: string,
  as: Tenant,
  copy: Map<string, any>,
  cursor: { since: string },
): Promise<number> {
  let brought = 0;
  let largest = cursor.since;
  for (let page = 1; ; page++) {
    const res = await call(
      base,
      'GET',
      `/api/v1/orders?modifiedSince=${encodeURIComponent(cursor.since)}&includeDeleted=true&limit=100&page=${page}`,
      { as },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const order of res.body.items) {
      copy.set(order.id, order);
      if (order.updatedAt > largest) largest = order.updatedAt;
    }
    brought += res.body.items.length;
    if (res.body.items.length < 100) break;
  }
  cursor.since = largest;
  return brought;
}

/**
 * Writers PATCH orders through every instance while a poller follows the guide through one of
 * them; when the writers stop, the poller's copy equals the server's state for every order.
 */
async function writeWhilePolling(servers: Server[], as: Tenant): Promise<void> {
  const { variantId, buyerId } = await createCatalogue(servers[0].base, as);
  const ids: string[] = [];
  for (let i = 0; i < ORDERS; i++) {
    const created = await call(servers[i % servers.length].base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
      as,
      body: orderBody(variantId),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ids.push(created.body.id);
  }
  const copy = new Map<string, any>();
  const cursor = { since: '1970-01-01T00:00:00.000Z' };
  let writing = true;
  let writes = 0;
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    for (let n = 0; writing; n++) {
      const id = ids[(w * 7 + n * 13) % ids.length];
      const res = await call(servers[(w + n) % servers.length].base, 'PATCH', `/api/v1/orders/${id}`, {
        as,
        body: { order: { properties: { sync: { [`w${w}`]: n } }, notes: `writer ${w}, write ${n}` } },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      writes++;
    }
  });
  const poller = (async () => {
    while (writing) await pollAsTheGuideSays(servers.at(-1)!.base, as, copy, cursor);
  })();
  await sleep(SECONDS * 1000);
  writing = false;
  await Promise.all([...writers, poller]);
  // One more poll after the last write, as the guide's next tick would make.
  await pollAsTheGuideSays(servers.at(-1)!.base, as, copy, cursor);
  const stale: string[] = [];
  for (const id of ids) {
    const live = await call(servers[0].base, 'GET', `/api/v1/orders/${id}`, { as });
    assert.equal(live.status, 200);
    if (JSON.stringify(copy.get(id)) !== JSON.stringify(live.body)) stale.push(id);
  }
  console.log(
    `# commit order: ${servers.length} instance(s), ${WRITERS} writers, ${writes} PATCHes in ${SECONDS} s; stale orders in the poller's copy: ${stale.length} of ${ORDERS}`,
  );
  assert.ok(writes > ORDERS, `the writers made ${writes} writes`);
  assert.deepEqual(stale, [], 'orders whose final state the poller never saw');
}

describe('A poller that follows the README misses no update while writers race it', () => {
  const skip = missing('postgres');
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('[postgres] three instances', { skip: skip ?? false, timeout: 180_000 }, async () => {
    const database = await createPgDatabase();
    cleanups.push(() => database.drop());
    const servers = await startServers(3, { DATABASE_URL: database.url });
    cleanups.push(async () => {
      await Promise.all(servers.map((s) => s.stop()));
    });
    await writeWhilePolling(servers, await cliCreateBusiness(database.url, 'Commit order'));
  });

  it('[sqlite] one instance', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-commit-order-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const url = `sqlite:${join(dir, 'db.sqlite')}`;
    const servers = await startServers(1, { DATABASE_URL: url });
    cleanups.push(async () => {
      await Promise.all(servers.map((s) => s.stop()));
    });
    await writeWhilePolling(servers, await cliCreateBusiness(url, 'Commit order'));
  });
});
