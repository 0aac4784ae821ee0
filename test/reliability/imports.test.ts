import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createDatabase } from '../../src/db/connection.ts';
import {
  call,
  cliCreateBusiness,
  createPgDatabase,
  missing,
  sleep,
  startServer,
  type Server,
  type Tenant,
} from './helpers.ts';

/** A short lease, so that the restarted instance resumes the import soon after the kill. */
const ENV = { IMPORT_LEASE_SECONDS: '2', LOG_LEVEL: 'warn' };

async function importOf(server: Server, t: Tenant, id: string) {
  const r = await call(server.base, 'GET', `/api/v1/imports/${id}`, { as: t });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** Lines of LINES item creates, each named after its line, so that a line applied twice, or one skipped, shows. */
async function itemLines(_server: Server, _t: Tenant, LINES: number): Promise<string[]> {
  return Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      op: 'create',
      resource: 'item',
      ref: `i${i}`,
      data: {
        item: { name: `Imported ${i}` },
        variants: [{ variantName: 'Default', currency: 'AUD', price: (i % 90) + 1 }],
      },
    }),
  );
}

/** Lines of LINES shipments of one unit each of one order's line, each with its own ASN as its reference. */
async function shipmentLines(server: Server, t: Tenant, LINES: number): Promise<string[]> {
  const made = async (path: string, body: unknown) => {
    const r = await call(server.base, 'POST', path, { as: t, body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const item = await made('/api/v1/items', {
    item: { name: 'Crate' },
    variants: [{ variantName: 'Default', currency: 'AUD', price: 3 }],
  });
  const buyer = await made('/api/v1/buyers', { buyer: { name: 'Acme' } });
  const order = await made(`/api/v1/buyers/${buyer.id}/orders`, {
    expectedDeliveryAt: '2030-01-01T00:00:00.000Z',
    orderItems: [{ itemVariantId: item.variantIds[0], quantity: LINES + 10 }],
  });
  return Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      op: 'create',
      resource: 'shipment',
      orderId: order.id,
      data: { externalReference: `ASN-${i}`, lines: [{ orderItemId: order.orderItems[0].id, quantity: 1 }] },
    }),
  );
}

/** What an import of `kind` made: each line's record exactly once, and one created event each. */
async function checkApplied(databaseUrl: string, kind: 'item' | 'shipment', t: Tenant, id: string, rows: any[]) {
  const LINES = rows.length;
  const handle = createDatabase(databaseUrl);
  try {
    const made =
      kind === 'item'
        ? await handle.db
            .selectFrom('items')
            .select(['id', 'name as key'])
            .where('business_id', '=', t.businessId)
            .execute()
        : await handle.db
            .selectFrom('shipments')
            .select(['id', 'external_reference as key'])
            .where('business_id', '=', t.businessId)
            .execute();
    assert.equal(made.length, LINES);
    assert.equal(new Set(made.map((r) => r.key)).size, LINES);
    assert.deepEqual(new Set(made.map((r) => r.id)), new Set(rows.map((r) => r.id)));
    const events = await handle.db
      .selectFrom('events')
      .select('id')
      .where('business_id', '=', t.businessId)
      .where('type', '=', `${kind}.created`)
      .where('request_id', '=', id)
      .execute();
    assert.equal(events.length, LINES);
  } finally {
    await handle.close();
  }
}

/**
 * An import of LINES lines (items, or shipments of one order), killed with SIGKILL part-way, then
 * resumed by a new instance: every line is applied exactly once, and the same file under the same
 * Idempotency-Key is still the same import.
 */
async function killAndResume(databaseUrl: string, LINES: number, kind: 'item' | 'shipment' = 'item') {
  const t = await cliCreateBusiness(databaseUrl, 'Import crash');
  let server = await startServer({ DATABASE_URL: databaseUrl, ...ENV });
  try {
    const lines = await (kind === 'item' ? itemLines : shipmentLines)(server, t, LINES);
    const body = `${lines.join('\n')}\n`;
    const send = (s: Server) =>
      fetch(`${s.base}/api/v1/imports`, {
        method: 'POST',
        body,
        headers: { ...t.headers, 'content-type': 'application/x-ndjson', 'idempotency-key': 'crash-import' },
      });
    const posted = await send(server);
    const text = await posted.text();
    assert.equal(posted.status, 202, text);
    const { id } = JSON.parse(text) as { id: string };
    // Killed while it runs: some lines done, most not.
    for (let i = 0; i < 1000 && (await importOf(server, t, id)).linesDone < 10; i++) await sleep(5);
    const before = await importOf(server, t, id);
    assert.ok(
      before.linesDone >= 10 && before.linesDone < LINES,
      `killed part-way: ${before.linesDone} of ${LINES} done`,
    );
    await server.kill();

    server = await startServer({ DATABASE_URL: databaseUrl, ...ENV });
    const again = await send(server);
    assert.equal(again.status, 202);
    assert.equal(
      ((await again.json()) as { id: string }).id,
      id,
      'the same file under the same key is the same import',
    );
    let done = await importOf(server, t, id);
    for (let i = 0; i < 3000 && done.state !== 'COMPLETED'; i++) {
      await sleep(50);
      done = await importOf(server, t, id);
    }
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done));
    assert.deepEqual(done.counts, { created: LINES, updated: 0, unchanged: 0, failed: 0 });

    const results = await fetch(`${server.base}/api/v1/imports/${id}/results`, { headers: t.headers });
    const rows = (await results.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      rows.map((r) => r.line),
      Array.from({ length: LINES }, (_, i) => i + 1),
      'one result per line, in order',
    );
    // In the database: each line's record exactly once, and one event each.
    await checkApplied(databaseUrl, kind, t, id, rows);
    console.log(
      `# import of ${kind}s [${databaseUrl.split(':')[0]}]: killed at ${before.linesDone} of ${LINES} lines; resumed; ${done.linesPerSecond} lines/s`,
    );
  } finally {
    await server.stop();
  }
}

describe('An import survives kill -9 of its instance: every line applies exactly once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-import-crash-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('[sqlite] resumes after a restart', { timeout: 240_000 }, async () => {
    await killAndResume(`sqlite:${join(dir, 'import.db')}`, 5000);
  });

  it('[sqlite] resumes an import of shipments after a restart: no unit ships twice', { timeout: 240_000 }, async () => {
    await killAndResume(`sqlite:${join(dir, 'import-shipments.db')}`, 1500, 'shipment');
  });

  const skip = missing('postgres');
  it('[postgres] resumes after a restart', { skip: skip ?? false, timeout: 240_000 }, async () => {
    const database = await createPgDatabase();
    try {
      await killAndResume(database.url, 2000);
    } finally {
      await database.drop();
    }
  });

  it('[postgres] resumes an import of shipments after a restart: no unit ships twice', {
    skip: skip ?? false,
    timeout: 240_000,
  }, async () => {
    const database = await createPgDatabase();
    try {
      await killAndResume(database.url, 600, 'shipment');
    } finally {
      await database.drop();
    }
  });
});
