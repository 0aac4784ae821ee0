import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kysely } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { PoolerSafePostgresDialect } from '../../src/db/migration-lock.ts';
import type { Database } from '../../src/db/types.ts';
import {
  advisoryLocks,
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startPgBouncer,
  startServers,
  type Server,
} from './helpers.ts';

/**
 * Many operators put PgBouncer in transaction mode in front of PostgreSQL (issue 50). There a
 * session's named statements and LISTEN outlive the transaction that made them, on a server
 * connection the next client may get: every entry point must honour PG_PREPARED_STATEMENTS=off, and
 * the events listener connects past the pooler (DATABASE_DIRECT_URL). The three instances start
 * at the same moment, each running the migrations.
 */
describe('The CLI and three instances through PgBouncer in transaction mode', () => {
  const skip = missing('postgres');
  let database: Awaited<ReturnType<typeof createPgDatabase>> | undefined;
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
  const servers: Server[] = [];
  const pooled = () => ({ PG_PREPARED_STATEMENTS: 'off', DATABASE_DIRECT_URL: database!.url });

  before(async () => {
    if (skip) return;
    database = await createPgDatabase();
    bouncer = await startPgBouncer(database.url);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await bouncer?.stop();
    await database?.drop();
  });

  it('migrates an empty database through the pooler, and runs the CLI again and again', {
    skip: skip ?? false,
  }, async () => {
    // The first run migrates; each later one runs its statements on whichever server connection the
    // pooler hands it, where an earlier run's named statements would still be.
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await cliCreateBusiness(bouncer!.url, `Pooled ${i}`, undefined, pooled())).businessId);
    assert.equal(new Set(ids).size, 3);
  });

  it('serves the API from three instances, and a long poll on one wakes for a commit on another', {
    skip: skip ?? false,
  }, async () => {
    servers.push(...(await startServers(3, { DATABASE_URL: bouncer!.url, ...pooled() })));
    const [a, b, c] = servers.map((s) => s.base);
    const t = await cliCreateBusiness(bouncer!.url, 'Pooled API', undefined, pooled());
    const { variantId, buyerId } = await createCatalogue(a, t);
    const created = await call(b, 'POST', `/api/v1/buyers/${buyerId}/orders`, { as: t, body: orderBody(variantId) });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const read = await call(c, 'GET', `/api/v1/orders/${created.body.id}`, { as: t });
    assert.equal(read.status, 200);
    const patched = await call(a, 'PATCH', `/api/v1/orders/${created.body.id}`, {
      as: t,
      body: { order: { notes: 'Pooled' } },
      headers: { 'if-match': read.headers.get('etag')! },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const listed = await call(b, 'GET', '/api/v1/orders?limit=10', { as: t });
    assert.deepEqual(
      listed.body.items.map((o: any) => [o.id, o.notes]),
      [[created.body.id, 'Pooled']],
    );

    const feed = await call(a, 'GET', '/api/v1/events?after=0&limit=1000', { as: t });
    assert.equal(feed.status, 200);
    const began = Date.now();
    const waiting = call(a, 'GET', `/api/v1/events?after=${feed.body.lastSequence}&wait=20`, { as: t });
    await sleep(500);
    const item = await call(c, 'POST', '/api/v1/items', {
      as: t,
      body: { item: { name: 'Woken' }, variants: [{ variantName: 'a', currency: 'AUD', price: 1 }] },
    });
    assert.equal(item.status, 201);
    const woke = await waiting;
    assert.equal(woke.status, 200);
    assert.deepEqual(
      woke.body.items.map((e: any) => e.type),
      ['item.created'],
    );
    assert.ok(Date.now() - began < 5000, `the long poll woke at the commit, not at its end (${Date.now() - began} ms)`);
  });
});

/**
 * A pool of one client through the pooler that, after each statement run outside a transaction,
 * has another client take the server connection that statement ran on (PgBouncer hands out the one
 * freed last) and keep it in a transaction until `release`: so the next statement lands on another
 * server connection, as it may by chance whenever instances share the pooler.
 */
function hoppingPool(url: string) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const held: pg.Client[] = [];
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<pg.QueryResult>;
    (client as unknown as { query: typeof query }).query = async (...args) => {
      const result = await query(...args);
      if (client.getTransactionStatus() === 'I') {
        const other = new pg.Client({ connectionString: url });
        await other.connect();
        await other.query('begin');
        await other.query('select 1');
        held.push(other);
      }
      return result;
    };
  });
  return {
    pool,
    async release() {
      // Committed first: a client that leaves in a transaction makes PgBouncer close its server connection.
      for (const other of held.splice(0)) {
        await other.query('commit');
        await other.end();
      }
    },
  };
}

describe('Advisory locks through PgBouncer in transaction mode', () => {
  const skip = missing('postgres');
  const databases: Array<Awaited<ReturnType<typeof createPgDatabase>>> = [];
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
  const through = (database: { url: string }) => {
    const url = new URL(bouncer!.url);
    url.pathname = new URL(database.url).pathname;
    return url.toString();
  };

  before(async () => {
    if (skip) return;
    databases.push(await createPgDatabase(), await createPgDatabase());
    // Room for every server connection the hopping pool keeps busy.
    bouncer = await startPgBouncer(databases[0].url, { default_pool_size: 40 });
  });
  after(async () => {
    await bouncer?.stop();
    await Promise.all(databases.map((d) => d.drop()));
  });

  it('a session-level lock is left on an idle server connection when its unlock lands on another', {
    skip: skip ?? false,
  }, async () => {
    const hopping = hoppingPool(through(databases[0]));
    const client = await hopping.pool.connect();
    await client.query('select pg_advisory_lock(42)');
    const { rows } = await client.query('select pg_advisory_unlock(42) as unlocked');
    client.release();
    await hopping.pool.end();
    await hopping.release();
    assert.equal(rows[0].unlocked, false, 'the unlock ran where no lock was held');
    assert.deepEqual(
      (await advisoryLocks(databases[0].url)).map((l) => l.state),
      ['idle'],
    );
  });

  it('the migrations leave no lock behind, whichever server connection each statement lands on', {
    skip: skip ?? false,
  }, async () => {
    const hopping = hoppingPool(through(databases[1]));
    const db = new Kysely<Database>({ dialect: new PoolerSafePostgresDialect({ pool: hopping.pool }) });
    try {
      assert.ok((await migrateToLatest(db, 'postgres')).includes('0001-foundation'));
    } finally {
      await db.destroy();
      await hopping.release();
    }
    assert.deepEqual(await advisoryLocks(databases[1].url), []);
  });
});
