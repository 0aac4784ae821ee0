import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { runTogether } from '../src/db/together.ts';
import { backends, createTestContext, createTestDatabase, type TestDatabase } from './helpers/context.ts';
import { createFixture, createOrder, patchOrder } from './helpers/orders.ts';

/** The texts node-postgres is asked to send (each one message and one round trip) while recording. */
let recording: string[] | null = null;
const original = pg.Client.prototype.query;
// Installed before any connection is made: the pool's connections take the query method they find.
before(() => {
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    recording?.push(typeof config === 'string' ? config : (config as { text: string }).text);
    return (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
  } as typeof original;
});
after(() => { pg.Client.prototype.query = original; });

const sent = async <T>(work: () => Promise<T>): Promise<{ texts: string[]; result: T }> => {
  const texts: string[] = [];
  recording = texts;
  try {
    return { texts, result: await work() };
  } finally {
    recording = null;
  }
};

for (const backend of backends) {
  describe(`[${backend}] statements run together (src/db/together.ts)`, () => {
    let database: TestDatabase;
    const hostile = "O'Brien \\'); drop table tg_t; -- \u00e9 東京 🚚";

    before(async () => {
      database = await createTestDatabase(backend);
      await sql`create table tg_t (id text primary key, n integer, tags text)`.execute(database.handle.db);
    });
    after(async () => {
      await database.handle.close();
      await database.drop();
    });

    it('returns each statement\'s rows, in order, as if each ran alone; on PostgreSQL in one message with the BEGIN', async () => {
      const { db } = database.handle;
      const write = (trx: typeof db, id: string, n: number) => runTogether(trx, [
        trx.insertInto('tg_t' as any).values({ id, n, tags: hostile }).returningAll(),
        trx.insertInto('tg_t' as any).values([{ id: `${id}2`, n: n + 1, tags: null }, { id: `${id}3`, n: n + 2, tags: 'x' }]).returning(['id']),
        trx.selectFrom('tg_t' as any).select(['id', 'n']).where('id', 'in', [id, `${id}2`, `${id}3`]).orderBy('id'),
        sql`select cast(count(*) as integer) as c from tg_t where n >= ${n}`,
      ]);
      // A first run names the statements on its connection; the next ones find them prepared.
      for (let round = 0; round < 3; round++) await db.transaction().execute((trx) => write(trx, `w${round}`, round * 10));
      const { texts, result } = await sent(() => db.transaction().execute((trx) => write(trx, 'a', 100)));
      assert.deepEqual(result, [
        [{ id: 'a', n: 100, tags: hostile }],
        [{ id: 'a2' }, { id: 'a3' }],
        [{ id: 'a', n: 100 }, { id: 'a2', n: 101 }, { id: 'a3', n: 102 }],
        [{ c: 3 }],
      ]);
      if (backend === 'postgres') {
        assert.equal(texts.length, 2, texts.join('\n'));
        assert.match(texts[0], /^begin; execute supplyline_\d+\(/);
        assert.equal(texts[1], 'commit');
      }
    });

    it('fails as the statement that fails would alone, and the transaction keeps nothing of it', async () => {
      const { db } = database.handle;
      const twice = (trx: typeof db) => runTogether(trx, [
        trx.insertInto('tg_t' as any).values({ id: 'b', n: 1, tags: null }),
        trx.insertInto('tg_t' as any).values({ id: 'a', n: 1, tags: null }),
        trx.selectFrom('tg_t' as any).selectAll(),
      ]);
      for (let round = 0; round < 2; round++) {
        await assert.rejects(db.transaction().execute(twice), (error: { code?: string; message?: string }) =>
          backend === 'postgres' ? error.code === '23505' : /UNIQUE constraint failed/.test(error.message ?? ''));
      }
      assert.deepEqual((await db.selectFrom('tg_t' as any).select('id').where('id', '=', 'b').execute()), []);
      // The connection is free for the next transaction.
      assert.deepEqual(await db.transaction().execute((trx) => runTogether(trx, [trx.selectFrom('tg_t' as any).select('id').where('id', '=', 'a')])), [[{ id: 'a' }]]);
    });

    it('recovers when another instance adds a column to a table a statement reads with *', async () => {
      const { db } = database.handle;
      await sql`create table tg_cols (id text primary key)`.execute(db);
      await sql`insert into tg_cols values ('k')`.execute(db);
      const read = (trx: typeof db) => runTogether(trx, [
        trx.selectFrom('tg_cols' as any).selectAll().where('id', '=', 'k'),
        trx.selectFrom('tg_t' as any).select('id').where('id', '=', 'a'),
      ]);
      for (let round = 0; round < 3; round++) await db.transaction().execute(read);
      await sql`alter table tg_cols add column extra integer not null default 5`.execute(db);
      // The first transaction may fail (the caller retries a transaction); every later one answers.
      await db.transaction().execute(read).catch((error: Error) => assert.match(error.message, /cached plan must not change result type/));
      for (let round = 0; round < 3; round++) {
        assert.deepEqual(await db.transaction().execute(read), [[{ id: 'k', extra: 5 }], [{ id: 'a' }]]);
      }
    });
  });
}

// Round trips are PostgreSQL's: SQLite runs in process.
for (const backend of backends.filter((b) => b === 'postgres')) {
  describe(`[${backend}] the round trips of an order's writes`, () => {
    it('a PATCH of fields, properties and an item makes two, a create three; each answers as before', async () => {
      const ctx = await createTestContext(backend);
      try {
        const t = await ctx.createTenant();
        const f = await createFixture(ctx, t);
        const patch = (id: string, itemId: string, n: number) =>
          patchOrder(ctx, t, id, { order: { notes: `n${n}`, properties: { erp: { n } } }, updateOrderItems: [{ id: itemId, quantity: n }] });
        // The first of each prepares its statements on the connections (and warms the key's cache).
        for (let i = 1; i <= 3; i++) {
          const order = await createOrder(ctx, t, f);
          assert.equal((await patch(order.id, order.orderItems[0].id, i)).status, 200);
        }
        const { texts: creating, result: created } = await sent(() => createOrder(ctx, t, f));
        // The buyer's partnership, then the lock-free reads with the BEGIN, then the writes with the commit.
        assert.equal(creating.length, 3, creating.join('\n'));
        assert.match(creating[2], /^with n as \(.*; insert into "orders" .*; insert into "order_items" .*; select append_events\(.*; commit$/s);
        assert.match(created.internalReference, /^SO-\d{6}$/);
        const { texts: patching, result: patched } = await sent(() => patch(created.id, created.orderItems[0].id, 7));
        assert.equal(patching.length, 2, patching.join('\n'));
        // The lock and the reads, then the writes with the commit.
        assert.match(patching[0], /^begin; execute supplyline_\d+\(.*; execute supplyline_\d+\(/s);
        assert.match(patching[1], /^update "order_items" set .*; update "orders" set .*; select append_events\(.*; commit$/s);
        assert.equal(patched.status, 200);
        assert.deepEqual([patched.body.notes, patched.body.properties, patched.body.orderItems[0].quantity, patched.body.version], ['n7', { erp: { n: 7 } }, 7, 2]);
        const read = await ctx.request('GET', `/api/v1/orders/${created.id}`, { as: t });
        assert.deepEqual(read.body, patched.body);
      } finally {
        await ctx.close();
      }
    });
  });
}
