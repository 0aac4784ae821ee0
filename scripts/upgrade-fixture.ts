// Makes a database with an earlier release, for test/upgrade-from-releases.test.ts: the release's
// own server writes varied data through its API (a 64-bit ERP id in properties among it), its
// answers to a set of reads are recorded, and the database is kept, on SQLite and on PostgreSQL.
//
//   git worktree add /tmp/rel/r1123 670541f && (cd /tmp/rel/r1123 && npm ci)
//   npx tsx scripts/upgrade-fixture.ts --release /tmp/rel/r1123 --name 2026-11-23 --pg postgres://postgres@127.0.0.1:5432/test
//
// Writes test/fixtures/upgrade/<name>/{sqlite.db, postgres.dump, recorded.json}.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openSqliteDatabase } from '../src/db/sqlite-driver.ts';

const { values } = parseArgs({
  options: {
    release: { type: 'string' },
    name: { type: 'string' },
    pg: { type: 'string' },
    out: { type: 'string', default: 'test/fixtures/upgrade' },
  },
});
if (!values.release || !values.name || !values.pg) throw new Error('--release DIR --name NAME --pg POSTGRES_URL');
const out = join(values.out!, values.name);
mkdirSync(out, { recursive: true });

/** The release's server on `databaseUrl`, and the demo business it made on its first start. */
async function startRelease(
  databaseUrl: string,
): Promise<{ child: ChildProcess; base: string; businessId: string; apiKey: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: values.release,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (d) => {
    text += d;
  });
  child.stderr!.on('data', (d) => {
    text += d;
  });
  for (let i = 0; i < 600 && !/listening on/.test(text); i++) await new Promise((r) => setTimeout(r, 100));
  const base = text.match(/listening on (http:\/\/\S+)/)?.[1];
  const businessId = text.match(/X-Business-Id: (bus_\w+)/)?.[1];
  const apiKey = text.match(/X-API-Key:\s+(sl_live_[0-9A-Za-z]{36}|[0-9a-f]{32})/)?.[1];
  if (!base || !businessId || !apiKey) throw new Error(`the release did not start:\n${text}`);
  return { child, base, businessId, apiKey };
}

const BIG = '12345678901234567890';

/** Varied writes through the release's API; returns the reads to record. */
async function write(base: string, headers: Record<string, string>): Promise<string[]> {
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    // The 64-bit id goes into the JSON text as a bare number, as an ERP's client sends it.
    const send = (text: string | undefined) =>
      fetch(`${base}${path}`, {
        method,
        headers: { ...headers, ...(text ? { 'content-type': 'application/json' } : {}) },
        body: text,
      });
    let res = await send(body === undefined ? undefined : JSON.stringify(body).replaceAll(`"${BIG}"`, BIG));
    let json = res.status === 204 ? null : await res.json();
    // A release that refuses such numbers gets the id as a string, as its error says to send it.
    if (res.status === 400 && JSON.stringify(json).includes('lose digits')) {
      res = await send(JSON.stringify(body));
      json = res.status === 204 ? null : await res.json();
    }
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const item = await call('POST', '/api/v1/items', {
    item: { name: 'Green tea', properties: { erp: { id: BIG } } },
    variants: [
      { variantName: '500g', sku: 'TEA-500', currency: 'AUD', price: 12.5, cost: 4 },
      { variantName: '1kg', sku: 'TEA-1K', currency: 'AUD', price: 22, cost: 7 },
    ],
  });
  const other = await call('POST', '/api/v1/items', {
    item: { name: 'Mug' },
    variants: [{ currency: 'AUD', price: 9.9 }],
  });
  const buyer = await call('POST', '/api/v1/buyers', {
    buyer: { name: 'Acme Foods', properties: { erp: { id: BIG } } },
  });
  const second = await call('POST', '/api/v1/buyers', { buyer: { name: 'Bistro' } });
  await call('POST', '/api/v1/pricing', {
    itemListData: { label: 'Acme', globalPriceFactor: 0.9 },
    entries: [{ itemVariantId: item.variantIds[0] }],
    partnerships: [buyer.partnershipId],
  });
  const orders: string[] = [];
  const statuses = ['UNASSIGNED', 'ACCEPTED', 'PACKED', 'IN_TRANSIT', 'DELIVERED'];
  for (let i = 0; i < 10; i++) {
    const who = i % 3 === 0 ? second : buyer;
    const order = await call('POST', `/api/v1/buyers/${who.id}/orders`, {
      expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
      status: statuses[i % statuses.length],
      orderItems: [
        { itemVariantId: item.variantIds[i % 2], quantity: 1 + i },
        ...(i % 2 === 0 ? [{ itemVariantId: other.variantIds[0], quantity: 2 }] : []),
      ],
      properties: i % 2 === 0 ? { erp: { id: BIG, no: i } } : { shop: { ref: `S-${i}` } },
    });
    orders.push(order.id);
  }
  await call('PATCH', `/api/v1/orders/${orders[1]}`, { order: { phase: 'ACTIVE', notes: 'rush' } });
  await call('PATCH', `/api/v1/orders/${orders[2]}`, {
    updateOrderItems: [{ id: (await call('GET', `/api/v1/orders/${orders[2]}`)).orderItems[0].id, quantity: 9 }],
  });
  await call('DELETE', `/api/v1/orders/${orders[3]}`);
  const invoice = await call('POST', '/api/v1/invoices', { orderId: orders[0] });
  await call('PATCH', `/api/v1/invoices/${invoice.id}`, { status: 'AUTHORISED', properties: { xero: { id: BIG } } });
  await call('POST', '/api/v1/invoices', { orderId: orders[4] });
  await call('PATCH', `/api/v1/items/${other.id}`, { description: 'Stoneware' });
  return [
    ...orders.map((id) => `/api/v1/orders/${id}`),
    `/api/v1/items/${item.id}`,
    `/api/v1/items/${other.id}`,
    `/api/v1/buyers/${buyer.id}`,
    `/api/v1/buyers/${second.id}`,
    `/api/v1/invoices/${invoice.id}`,
    '/api/v1/orders',
    '/api/v1/orders?limit=3&page=2',
    '/api/v1/orders?includeDeleted=true',
    '/api/v1/orders?status=SHIPPED',
    '/api/v1/orders?status=PREPARING',
    '/api/v1/orders?status=CANCELLED',
    '/api/v1/orders?phase=ACTIVE&status=ACCEPTED',
    '/api/v1/orders?propertyPath=erp.id',
    '/api/v1/items',
    '/api/v1/buyers',
    '/api/v1/pricing',
    '/api/v1/invoices',
    '/api/v1/invoices?includeDeleted=true',
    '/api/v1/invoices?status=AUTHORISED',
  ];
}

/** The release's answers to the reads: status, ETag and body. */
async function record(base: string, headers: Record<string, string>, reads: string[]) {
  const answers = [];
  for (const path of reads) {
    const res = await fetch(`${base}${path}`, { headers });
    answers.push({ path, status: res.status, etag: res.headers.get('etag'), body: await res.json() });
  }
  return answers;
}

async function stop(child: ChildProcess) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const recorded: Record<string, unknown> = {};
// SQLite: a file of its own, checkpointed into one file once the release has stopped.
{
  const dir = mkdtempSync(join(tmpdir(), 'upgrade-fixture-'));
  const file = join(dir, 'supplyline.db');
  const release = await startRelease(`sqlite:${file}`);
  const headers = { 'x-business-id': release.businessId, 'x-api-key': release.apiKey };
  const reads = await write(release.base, headers);
  recorded.sqlite = {
    businessId: release.businessId,
    apiKey: release.apiKey,
    answers: await record(release.base, headers, reads),
  };
  await stop(release.child);
  const db = openSqliteDatabase(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.pragma('journal_mode = DELETE');
  db.close();
  copyFileSync(file, join(out, 'sqlite.db'));
  rmSync(dir, { recursive: true, force: true });
}
// PostgreSQL: a database of its own, dumped in pg_dump's custom format.
{
  const name = `fixture_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: values.pg });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(values.pg!);
  url.pathname = `/${name}`;
  try {
    const release = await startRelease(url.toString());
    const headers = { 'x-business-id': release.businessId, 'x-api-key': release.apiKey };
    const reads = await write(release.base, headers);
    recorded.postgres = {
      businessId: release.businessId,
      apiKey: release.apiKey,
      answers: await record(release.base, headers, reads),
    };
    await stop(release.child);
    execFileSync('pg_dump', ['--format=custom', '--no-owner', `--file=${join(out, 'postgres.dump')}`, url.toString()]);
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}
writeFileSync(join(out, 'recorded.json'), `${JSON.stringify(recorded, null, 1)}\n`);
console.log(`wrote ${out}`);
