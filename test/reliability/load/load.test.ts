import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import autocannon from 'autocannon';
import { createDatabase } from '../../../src/db/connection.ts';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  startServer,
} from '../helpers.ts';

const SECONDS = Number(process.env.RELIABILITY_LOAD_SECONDS || 30);
const CONNECTIONS = 200;
const SEED_ORDERS = 20;
/** A new connection must be answered within this while 200 others are busy (without the turn gate: 14 s and growing). */
const NEW_CONNECTION_MS = 5000;

/**
 * Opens a new connection every 250 ms until stopped, and times a `/healthz` on each, from connect
 * to the first byte of the answer: a server that accepts new connections slower than they come
 * makes each one wait longer than the last.
 */
function probeNewConnections(base: string) {
  const { hostname, port } = new URL(base);
  const times: number[] = [];
  const errors: string[] = [];
  const open = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  const probe = () => {
    const started = performance.now();
    const done = new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname);
      socket.setTimeout(30_000, () => {
        errors.push('no answer in 30 s');
        socket.destroy();
      });
      socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: load\r\nConnection: close\r\n\r\n'));
      socket.once('data', () => {
        times.push(performance.now() - started);
        socket.destroy();
      });
      socket.on('error', (error) => errors.push(error.message));
      socket.on('close', () => resolve());
    });
    open.add(done);
    void done.then(() => open.delete(done));
    timer = setTimeout(probe, 250);
  };
  timer = setTimeout(probe, 250);
  return {
    async stop() {
      clearTimeout(timer);
      await Promise.all(open);
      return { count: times.length, maxMs: Math.round(Math.max(0, ...times)), errors };
    },
  };
}

/**
 * 70% reads (order page, one order, item page) and 30% writes (order create, property PATCH),
 * from 200 connections for SECONDS. Every write the server acknowledged is then looked up
 * directly in the database.
 */
async function runLoad(label: string, databaseUrl: string) {
  const t = await cliCreateBusiness(databaseUrl, `Load ${label}`);
  const server = await startServer({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' });
  try {
    const { variantId, buyerId } = await createCatalogue(server.base, t);
    const seeded: string[] = [];
    for (let i = 0; i < SEED_ORDERS; i++) {
      const r = await call(server.base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
        as: t,
        body: orderBody(variantId),
      });
      assert.equal(r.status, 201);
      seeded.push(r.body.id);
    }
    const createdIds: string[] = [];
    const patched: Array<{ orderId: string; key: string }> = [];
    let n = 0;
    const createBody = JSON.stringify(orderBody(variantId, { notes: 'load' }));
    const readHeaders = { ...t.headers };
    const headers = { ...t.headers, 'content-type': 'application/json' };
    const samples: string[] = [];

    const probes = probeNewConnections(server.base);
    const result = await autocannon({
      url: server.base,
      connections: CONNECTIONS,
      duration: SECONDS,
      timeout: 30,
      requests: [
        {
          setupRequest(req: any, context: any) {
            const i = n++;
            const roll = i % 10;
            context.write = undefined;
            if (roll < 3)
              return { ...req, method: 'GET', path: '/api/v1/orders?limit=20', headers: readHeaders, body: undefined };
            if (roll < 5)
              return {
                ...req,
                method: 'GET',
                path: `/api/v1/orders/${seeded[i % SEED_ORDERS]}`,
                headers: readHeaders,
                body: undefined,
              };
            if (roll < 7)
              return { ...req, method: 'GET', path: '/api/v1/items?limit=20', headers: readHeaders, body: undefined };
            if (roll < 9) {
              context.write = { kind: 'create' };
              return { ...req, method: 'POST', path: `/api/v1/buyers/${buyerId}/orders`, headers, body: createBody };
            }
            const orderId = seeded[i % SEED_ORDERS];
            context.write = { kind: 'patch', orderId, key: `w${i}` };
            return {
              ...req,
              method: 'PATCH',
              path: `/api/v1/orders/${orderId}`,
              headers,
              body: JSON.stringify({ order: { properties: { [`w${i}`]: i } } }),
            };
          },
          onResponse(status: number, body: string, context: any) {
            if (status >= 300 && samples.length < 3) samples.push(`${status} ${body.slice(0, 300)}`);
            const w = context.write;
            if (!w) return;
            if (w.kind === 'create' && status === 201) createdIds.push(JSON.parse(body).id);
            if (w.kind === 'patch' && status === 200) patched.push({ orderId: w.orderId, key: w.key });
          },
        },
      ] as any,
    });

    const fresh = await probes.stop();

    // Every acknowledged write, looked up in the database itself.
    const handle = createDatabase(databaseUrl);
    try {
      const present = new Set<string>();
      for (let i = 0; i < createdIds.length; i += 500) {
        const rows = await handle.db
          .selectFrom('orders')
          .select('id')
          .where('business_id', '=', t.businessId)
          .where('id', 'in', createdIds.slice(i, i + 500))
          .execute();
        for (const r of rows) present.add(r.id);
      }
      const lostCreates = createdIds.filter((id) => !present.has(id)).length;
      let lostPatches = 0;
      for (const id of seeded) {
        const r = await call(server.base, 'GET', `/api/v1/orders/${id}`, { as: t });
        const props = r.body.properties ?? {};
        lostPatches += patched.filter((p) => p.orderId === id && !(p.key in props)).length;
      }
      const statusCounts = Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([k, v]) => [k, (v as { count?: number }).count ?? 0]),
      );
      const note =
        `# load [${label}]: ${SECONDS} s, ${CONNECTIONS} connections: ${result.requests.total} requests, ` +
        `${result.requests.average} req/s average, latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms; ` +
        `statuses ${JSON.stringify(statusCounts)}; errors ${result.errors}, timeouts ${result.timeouts}; ` +
        `acknowledged writes ${createdIds.length} creates + ${patched.length} patches, lost ${lostCreates + lostPatches}; ` +
        `${fresh.count} new connections answered in at most ${fresh.maxMs} ms, errors ${fresh.errors.length}`;
      console.log(note);
      if (samples.length) console.log(`# load [${label}] sample non-2xx answers: ${samples.join(' | ')}`);
      assert.equal(result['5xx'], 0, 'no 5xx');
      assert.equal(result.errors, 0, 'no connection errors');
      assert.equal(result.timeouts, 0, 'no timeouts');
      assert.equal(result.non2xx, 0, `every answer is 2xx: ${JSON.stringify(statusCounts)}`);
      assert.equal(lostCreates, 0, 'no acknowledged create lost');
      assert.equal(lostPatches, 0, 'no acknowledged PATCH lost');
      assert.ok(createdIds.length > 0 && patched.length > 0);
      assert.deepEqual(fresh.errors, [], 'every new connection answered');
      assert.ok(
        fresh.count > 0 && fresh.maxMs < NEW_CONNECTION_MS,
        `new connections answered within ${NEW_CONNECTION_MS} ms while 200 are busy: slowest ${fresh.maxMs} ms`,
      );
    } finally {
      await handle.close();
    }
  } finally {
    await server.stop();
  }
}

describe(`Load: ${SECONDS} s of 70% reads / 30% writes at ${CONNECTIONS} connections`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-load-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('[sqlite] no 5xx and no acknowledged write lost', { timeout: (SECONDS + 120) * 1000 }, async () => {
    await runLoad('sqlite', `sqlite:${join(dir, 'load.db')}`);
  });

  const skip = missing('postgres');
  it('[postgres] no 5xx and no acknowledged write lost', {
    skip: skip ?? false,
    timeout: (SECONDS + 120) * 1000,
  }, async () => {
    const database = await createPgDatabase();
    try {
      await runLoad('postgres', database.url);
    } finally {
      await database.drop();
    }
  });
});
