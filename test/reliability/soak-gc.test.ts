import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createDatabase } from '../../src/db/connection.ts';
import { describeSqliteDriver } from '../../src/db/sqlite-driver.ts';
import { call, cliCreateBusiness, createCatalogue, orderBody, startServer, type Tenant } from './helpers.ts';

const SECONDS = Number(process.env.RELIABILITY_SOAK_SECONDS || 30);
const GC_EVERY_MS = 250;
const WORKERS = 16;

/**
 * Loaded into the server before its own code: a full collection every GC_EVERY_MS, counted and
 * reported at exit. better-sqlite3 12 on Node 24.19+ aborted when a collection finalised a
 * statement outside JavaScript; forcing collections all through the load makes that likely.
 * A data: URL, so that it needs no loader; written without spaces, so that it fits NODE_OPTIONS.
 */
const FORCE_GC =
  'data:text/javascript,' +
  `globalThis.__gcs=0;setInterval(()=>{gc();globalThis.__gcs++},${GC_EVERY_MS}).unref();` +
  "process.on('exit',()=>console.error('forced-collections='+globalThis.__gcs))";

type Op = 'create' | 'patch' | 'get' | 'list' | 'item';
const MIX: Op[] = ['create', 'create', 'create', 'patch', 'patch', 'get', 'get', 'list', 'list', 'item'];

async function soak(databaseUrl: string, t: Tenant) {
  assert.ok(!/\s/.test(FORCE_GC));
  const server = await startServer({
    DATABASE_URL: databaseUrl,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc --import ${FORCE_GC}`.trim(),
  });
  const created: string[] = [];
  const patched: Array<{ orderId: string; key: string }> = [];
  const items: string[] = [];
  const failures: string[] = [];
  const counts: Record<Op, number> = { create: 0, patch: 0, get: 0, list: 0, item: 0 };
  let n = 0;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  try {
    const { variantId, buyerId } = await createCatalogue(server.base, t);
    const deadline = Date.now() + SECONDS * 1000;
    const worker = async () => {
      while (Date.now() < deadline && server.child.exitCode === null && server.child.signalCode === null) {
        const i = n++;
        const op = created.length < 20 ? 'create' : MIX[i % MIX.length];
        counts[op]++;
        const target = created[(i * 7919) % Math.max(created.length, 1)];
        const r =
          op === 'create'
            ? await call(server.base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
                as: t,
                body: orderBody(variantId, { notes: `soak ${i}` }),
                headers: { 'idempotency-key': `soak-${i}` },
              })
            : op === 'patch'
              ? await call(server.base, 'PATCH', `/api/v1/orders/${target}`, {
                  as: t,
                  body: { order: { properties: { [`s${i}`]: i } } },
                })
              : op === 'get'
                ? await call(server.base, 'GET', `/api/v1/orders/${target}`, { as: t })
                : op === 'list'
                  ? await call(server.base, 'GET', '/api/v1/orders?limit=20', { as: t })
                  : await call(server.base, 'POST', '/api/v1/items', {
                      as: t,
                      body: {
                        item: { name: `Soak item ${i}` },
                        variants: [{ variantName: 'Default', currency: 'AUD', price: i % 100, cost: 1 }],
                      },
                    });
        const ok = r.status === (op === 'create' || op === 'item' ? 201 : 200);
        if (!ok) {
          if (failures.length < 5) failures.push(`${op} ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
          continue;
        }
        if (op === 'create') created.push(r.body.id);
        if (op === 'patch') patched.push({ orderId: target, key: `s${i}` });
        if (op === 'item') items.push(r.body.id);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    assert.equal(
      server.child.exitCode ?? server.child.signalCode,
      null,
      `the server kept running under forced collections:\n${server.output().slice(-3000)}`,
    );
    assert.deepEqual(failures, [], 'every request answered as expected');

    // Every acknowledged PATCH, read back through the API while the server still runs.
    const keysOf = new Map<string, Set<string>>();
    for (const p of patched) {
      if (!keysOf.has(p.orderId)) {
        const r = await call(server.base, 'GET', `/api/v1/orders/${p.orderId}`, { as: t });
        assert.equal(r.status, 200);
        keysOf.set(p.orderId, new Set(Object.keys(r.body.properties ?? {})));
      }
    }
    const lostPatches = patched.filter((p) => !keysOf.get(p.orderId)!.has(p.key)).length;
    assert.equal(lostPatches, 0, 'no acknowledged PATCH lost');
  } finally {
    await server.stop();
    exit = { code: server.child.exitCode, signal: server.child.signalCode };
  }
  const output = server.output();
  assert.doesNotMatch(output, /Assertion failed|Segmentation fault|FATAL ERROR/, 'no native fault');
  assert.deepEqual(exit, { code: 0, signal: null }, `a clean shutdown after the soak:\n${output.slice(-3000)}`);
  const collections = Number(output.match(/forced-collections=(\d+)/)?.[1] ?? 0);
  assert.ok(collections >= (SECONDS * 1000) / GC_EVERY_MS / 2, `collections were forced all through (${collections})`);

  // Every acknowledged create, looked up in the database after the server is gone.
  const handle = createDatabase(databaseUrl);
  try {
    const present = new Set<string>();
    for (let i = 0; i < created.length; i += 500) {
      const rows = await handle.db
        .selectFrom('orders')
        .select('id')
        .where('business_id', '=', t.businessId)
        .where('id', 'in', created.slice(i, i + 500))
        .execute();
      for (const r of rows) present.add(r.id);
    }
    const itemRows =
      items.length === 0
        ? []
        : await handle.db
            .selectFrom('items')
            .select('id')
            .where('business_id', '=', t.businessId)
            .where('id', 'in', items)
            .execute();
    assert.equal(created.filter((id) => !present.has(id)).length, 0, 'no acknowledged order lost');
    assert.equal(itemRows.length, items.length, 'no acknowledged item lost');
  } finally {
    await handle.close();
  }
  assert.ok(created.length > 0 && patched.length > 0 && items.length > 0);
  return (
    `# soak [${describeSqliteDriver()}]: ${SECONDS} s, ${WORKERS} workers, ${n} requests ` +
    `(${Object.entries(counts)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')}), ${collections} forced collections; ` +
    `acknowledged ${created.length} orders + ${patched.length} patches + ${items.length} items, lost 0; exit code 0`
  );
}

describe(`Soak: ${SECONDS} s of mixed reads and writes with a forced collection every ${GC_EVERY_MS} ms`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-soak-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  // SQLite only: the fault this guards against is in the native SQLite driver; pg is plain JavaScript.
  it('[sqlite] the server neither aborts nor loses an acknowledged write', {
    timeout: (SECONDS + 120) * 1000,
  }, async () => {
    const url = `sqlite:${join(dir, 'soak.db')}`;
    const t = await cliCreateBusiness(url, 'Soak');
    console.log(await soak(url, t));
  });
});
