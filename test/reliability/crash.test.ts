import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqliteDatabase } from '../../src/db/sqlite-driver.ts';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startServer,
  type Server,
  type Tenant,
} from './helpers.ts';

interface Op {
  kind: 'create' | 'patch';
  key: string;
  path: string;
  body: unknown;
  /** For a PATCH: the order it changes. */
  orderId?: string;
  status?: number;
  id?: string;
}

/**
 * Drives creates and PATCHes with idempotency keys until stopped. A PATCH only targets an order
 * whose create was acknowledged, and sets a property named after its own key.
 */
function startWriter(
  server: () => Server,
  t: Tenant,
  catalogue: { variantId: string; buyerId: string },
  concurrency = 8,
) {
  const ops: Op[] = [];
  const acked: string[] = [];
  let running = true;
  let n = 0;
  const worker = async () => {
    while (running) {
      const i = n++;
      const op: Op =
        acked.length > 0 && i % 3 === 2
          ? (() => {
              const orderId = acked[i % acked.length];
              return {
                kind: 'patch' as const,
                key: `p-${i}`,
                orderId,
                path: `/api/v1/orders/${orderId}`,
                body: { order: { properties: { [`p${i}`]: i } } },
              };
            })()
          : {
              kind: 'create',
              key: `c-${i}`,
              path: `/api/v1/buyers/${catalogue.buyerId}/orders`,
              body: orderBody(catalogue.variantId, { notes: `op ${i}` }),
            };
      ops.push(op);
      const r = await call(server().base, op.kind === 'create' ? 'POST' : 'PATCH', op.path, {
        as: t,
        body: op.body,
        headers: { 'idempotency-key': op.key },
      });
      op.status = r.status;
      if (op.kind === 'create' && r.status === 201) {
        op.id = r.body.id;
        acked.push(r.body.id);
      }
      if (r.status === 0) await sleep(20);
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  return {
    ops,
    acked: () => acked.length,
    stop: async () => {
      running = false;
      await Promise.all(workers);
    },
  };
}

async function crashAndVerify(label: string, databaseUrl: string, env: Record<string, string> = {}) {
  const t = await cliCreateBusiness(databaseUrl, `Crash ${label}`);
  let server = await startServer({ DATABASE_URL: databaseUrl, ...env });
  const catalogue = await createCatalogue(server.base, t);
  const writer = startWriter(() => server, t, catalogue);
  while (writer.acked() < 40) await sleep(50);
  await server.kill();
  const ackedAtKill = writer.ops.filter((o) => o.status !== undefined && o.status >= 200 && o.status < 300).length;
  await sleep(300);
  await writer.stop();
  server = await startServer({ DATABASE_URL: databaseUrl, ...env });
  try {
    const ops = writer.ops;
    const acked = ops.filter((o) => o.status !== undefined && o.status >= 200 && o.status < 300);
    const failed = ops.filter((o) => o.status === 0).length;
    const bad = ops.filter((o) => o.status !== undefined && o.status >= 400);
    assert.deepEqual(
      bad.map((o) => [o.key, o.status]),
      [],
      'no request got an error answer before the crash',
    );

    // Every acknowledged write is present.
    const orders = new Map<string, any>();
    const fetchOrder = async (id: string) => {
      const r = await call(server.base, 'GET', `/api/v1/orders/${id}`, { as: t });
      assert.equal(r.status, 200, `order ${id} acknowledged before the crash is present`);
      orders.set(id, r.body);
    };
    for (const op of acked.filter((o) => o.kind === 'create')) await fetchOrder(op.id!);
    for (const op of acked.filter((o) => o.kind === 'patch')) {
      assert.ok(
        op.orderId && `p${op.key.slice(2)}` in orders.get(op.orderId).properties,
        `PATCH ${op.key} acknowledged before the crash is present`,
      );
    }

    // Retrying every request with its key creates nothing twice.
    for (const op of ops) {
      const r = await call(server.base, op.kind === 'create' ? 'POST' : 'PATCH', op.path, {
        as: t,
        body: op.body,
        headers: { 'idempotency-key': op.key },
      });
      assert.equal(
        r.status,
        op.kind === 'create' ? 201 : 200,
        `retry of ${op.key}: ${r.status} ${JSON.stringify(r.body)}`,
      );
      if (op.kind === 'create') {
        if (op.id) assert.equal(r.body.id, op.id, `retry of acknowledged ${op.key} replays the same order`);
        op.id = r.body.id;
      }
    }
    const creates = ops.filter((o) => o.kind === 'create');
    assert.equal(new Set(creates.map((o) => o.id)).size, creates.length, 'one order per create key');
    const list = await call(server.base, 'GET', '/api/v1/orders?limit=1', { as: t });
    assert.equal(list.body.total, creates.length, 'no duplicate orders after the retries');
    // Each PATCH applied exactly once: the order's version counts them.
    const patchesPer = new Map<string, number>();
    for (const o of ops) if (o.kind === 'patch') patchesPer.set(o.orderId!, (patchesPer.get(o.orderId!) ?? 0) + 1);
    for (const [id, count] of patchesPer) {
      const r = await call(server.base, 'GET', `/api/v1/orders/${id}`, { as: t });
      assert.equal(r.body.version, 1 + count, `order ${id}: each of its ${count} PATCHes applied once`);
    }
    // The event log: every write that exists has its one event, and the numbering has no hole
    // and no repeat, across the crash and the retries.
    const events: any[] = [];
    for (let after = 0; ; ) {
      const page = await call(server.base, 'GET', `/api/v1/events?after=${after}&limit=1000`, { as: t });
      assert.equal(page.status, 200);
      events.push(...page.body.items);
      after = page.body.lastSequence;
      if (!page.body.hasMore) break;
    }
    assert.deepEqual(
      events.map((e) => e.sequence),
      events.map((_, i) => i + 1),
      'events 1..N without a gap or a repeat',
    );
    const created = events
      .filter((e) => e.type === 'order.created')
      .map((e) => e.resourceId)
      .sort();
    assert.deepEqual(created, creates.map((o) => o.id!).sort(), 'one order.created per order');
    for (const [id, count] of patchesPer) {
      assert.equal(
        events.filter((e) => e.type === 'order.updated' && e.resourceId === id).length,
        count,
        `order ${id}: one event per PATCH`,
      );
    }
    const note =
      `# crash [${label}]: kill -9 after ${ackedAtKill} acknowledged writes; ${ops.length} requests sent, ${acked.length} acknowledged ` +
      `(${acked.filter((o) => o.kind === 'create').length} creates, ${acked.filter((o) => o.kind === 'patch').length} patches), ${failed} cut off; ` +
      `all acknowledged present; ${ops.length} retries -> ${creates.length} orders, no duplicates, every PATCH applied once; ` +
      `events 1..${events.length}, one per write`;
    return note;
  } finally {
    await server.stop();
  }
}

describe('kill -9 under write load, then restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-crash-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('[sqlite] loses no acknowledged write, duplicates nothing on retry, and the file passes integrity_check', {
    timeout: 180_000,
  }, async () => {
    const file = join(dir, 'crash.db');
    const note = await crashAndVerify('sqlite', `sqlite:${file}`);
    const db = openSqliteDatabase(file, { readonly: true });
    const check = db.pragma('integrity_check', { simple: true });
    db.close();
    assert.equal(check, 'ok');
    console.log(`${note}; PRAGMA integrity_check = ${check}`);
  });

  const skip = missing('postgres');
  it('[postgres] loses no acknowledged write and duplicates nothing on retry', {
    skip: skip ?? false,
    timeout: 180_000,
  }, async () => {
    const database = await createPgDatabase();
    try {
      console.log(await crashAndVerify('postgres', database.url));
    } finally {
      await database.drop();
    }
  });
});
