import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { createDatabase, type DatabaseHandle } from '../src/db/connection.ts';
import { backends, createTestDatabase, type TestDatabase } from './helpers/context.ts';

// Prepared statements are PostgreSQL's; this suite runs when TEST_DATABASE_URL is set.
for (const backend of backends.filter((b) => b === 'postgres')) {
  describe(`[${backend}] named statements (src/db/pg-prepared.ts)`, () => {
    let database: TestDatabase;
    const opened: DatabaseHandle[] = [];
    // One connection per handle, so that pg_prepared_statements shows what that connection prepared.
    const open = (prepare = true) => {
      const handle = createDatabase(database.url, { schema: database.schema, poolSize: 1, prepare });
      opened.push(handle);
      return handle.db;
    };
    /** The connection's named statements, but for this lookup itself. */
    const preparedNames = async (db: ReturnType<typeof open>) =>
      (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)).rows
        .filter((r) => !r.statement.includes('pg_prepared_statements')).map((r) => r.name);

    before(async () => {
      database = await createTestDatabase(backend);
      await sql`create table prep_t (a integer not null)`.execute(database.handle.db);
      await sql`insert into prep_t values (1), (2)`.execute(database.handle.db);
    });
    after(async () => {
      for (const handle of opened) await handle.close();
      await database.handle.close();
      await database.drop();
    });

    it('names a parameterised statement once per connection and reuses it', async () => {
      const db = open();
      const find = (a: number) => db.selectFrom('prep_t' as any).select('a').where('a', '=', a).execute();
      assert.deepEqual(await find(1), [{ a: 1 }]);
      assert.deepEqual(await find(2), [{ a: 2 }]);
      const names = await preparedNames(db);
      assert.equal(names.filter((n) => n.startsWith('supplyline_')).length, 1, JSON.stringify(names));
    });

    it('leaves statements unnamed when turned off, and bulk statements always', async () => {
      const off = open(false);
      await off.selectFrom('prep_t' as any).select('a').where('a', '=', 1).execute();
      assert.deepEqual((await preparedNames(off)).filter((n) => n.startsWith('supplyline_')), []);

      const on = open();
      const many = Array.from({ length: 40 }, (_, i) => i);
      assert.equal((await on.selectFrom('prep_t' as any).select('a').where('a', 'in', many).execute()).length, 2);
      assert.deepEqual((await preparedNames(on)).filter((n) => n.startsWith('supplyline_')), []);
    });

    it('prepares a select * again after another instance adds a column', async () => {
      const db = open();
      const all = (on: typeof db = db) => on.selectFrom('prep_t' as any).selectAll().where('a', '=', 1).execute();
      assert.deepEqual(await all(), [{ a: 1 }]);
      await sql`alter table prep_t add column b text not null default 'x'`.execute(database.handle.db);
      assert.deepEqual(await all(), [{ a: 1, b: 'x' }], 'outside a transaction the query is retried at once');

      await sql`alter table prep_t add column c integer not null default 7`.execute(database.handle.db);
      await assert.rejects(db.transaction().execute((trx) => all(trx)), /cached plan must not change result type/,
        'inside a transaction the caller retries');
      assert.deepEqual(await db.transaction().execute((trx) => all(trx)), [{ a: 1, b: 'x', c: 7 }]);
    });

    it('calls a function and commits in one round trip; the COMMIT Kysely sends after it is not sent', async () => {
      const { callAndCommit } = await import('../src/db/pg-call.ts');
      await sql`create table call_t (t text, b bytea, n integer, l text[], bs bytea[])`.execute(database.handle.db);
      await sql.raw(`create function call_put(p_t text, p_b bytea, p_n integer, p_l text[], p_bs bytea[]) returns void language sql
        as $$ insert into call_t values (p_t, p_b, p_n, p_l, p_bs) $$`).execute(database.handle.db);
      const db = open();
      // Text that would break out of a literal if it were not escaped: quotes, backslashes, a comment, non-ASCII.
      const hostile = "O'Brien \\'); drop table call_t; -- \u00e9 東京 🚚";
      const bytes = Buffer.from([0, 1, 0x27, 0x5c, 255]);
      await db.transaction().execute(async (trx) => {
        await callAndCommit(trx, 'call_put', [hostile, bytes, 42, ['a', "b'c", null], [bytes, Buffer.alloc(0)]]);
      });
      const [row] = (await sql<{ t: string; b: Buffer; n: number; l: Array<string | null>; bs: Buffer[] }>`select * from call_t`.execute(database.handle.db)).rows;
      assert.deepEqual(row, { t: hostile, b: bytes, n: 42, l: ['a', "b'c", null], bs: [bytes, Buffer.alloc(0)] });
      // The connection is left with no transaction open, and the next transaction runs as usual.
      await db.transaction().execute((trx) => sql`insert into call_t (t) values ('next')`.execute(trx));
      assert.equal((await sql`select * from call_t`.execute(database.handle.db)).rows.length, 2);

      // A call that fails commits nothing, and the transaction's own statements roll back with it.
      await assert.rejects(db.transaction().execute(async (trx) => {
        await sql`insert into call_t (t) values ('rolled back')`.execute(trx);
        await callAndCommit(trx, 'call_put', ['x', bytes, 'not a number' as never, [], []]);
      }));
      assert.equal((await sql`select * from call_t`.execute(database.handle.db)).rows.length, 2);
      await assert.rejects(callAndCommit(db, 'call_put; drop table call_t', []), /function name/);
    });

    describe('a transaction\'s BEGIN travels with its first statement', () => {
      /** The texts node-postgres is asked to send while `work` runs (each is one message and one round trip). */
      let recording: string[] | null = null;
      const original = pg.Client.prototype.query;
      const sent = async (work: () => Promise<unknown>): Promise<string[]> => {
        const texts: string[] = [];
        recording = texts;
        try {
          await work();
        } finally {
          recording = null;
        }
        return texts;
      };
      const hostile = "O'Brien \\'); drop table tx_t; -- \u00e9 東京 🚚";

      // Installed before this part's connections are made, which take the query method they find.
      before(async () => {
        pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
          recording?.push(typeof config === 'string' ? config : (config as { text: string }).text);
          return (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
        } as typeof original;
        await sql`create table tx_t (id text primary key, n integer, flag boolean, note text)`.execute(database.handle.db);
      });
      after(() => { pg.Client.prototype.query = original; });

      it('as `execute` of the statement the connection prepared, with the same answer and in the same transaction', async () => {
        const db = open();
        const put = (on: typeof db, id: string, n: number | null, flag: boolean, note: string | null) =>
          on.insertInto('tx_t' as any).values({ id, n, flag, note }).returningAll().execute();
        // The first run prepares the insert on this connection: BEGIN goes alone.
        const first = await sent(() => db.transaction().execute((trx) => put(trx, 'a', 1, true, 'x')));
        assert.equal(first[0], 'begin');
        assert.match(first[1], /^insert into/);

        let answer: unknown;
        const second = await sent(() => db.transaction().execute(async (trx) => { answer = await put(trx, 'b', null, false, hostile); }));
        assert.match(second[0], /^begin; execute supplyline_\d+\('b', null, 'false', /);
        assert.deepEqual(second.slice(1), ['commit']);
        assert.deepEqual(answer, [{ id: 'b', n: null, flag: false, note: hostile }]);

        // What the transaction did after the BEGIN rolls back with it.
        await assert.rejects(db.transaction().execute(async (trx) => {
          await put(trx, 'c', 3, true, null);
          throw new Error('stop');
        }), /stop/);
        const rows = (await sql<{ id: string }>`select id from tx_t order by id`.execute(database.handle.db)).rows.map((r) => r.id);
        assert.deepEqual(rows, ['a', 'b']);
      });

      it('reports the first statement\'s error as it is, and leaves the connection as it was', async () => {
        const db = open();
        const put = (on: typeof db, id: string) => on.insertInto('tx_t' as any).values({ id, n: 1, flag: true, note: null }).execute();
        await db.transaction().execute((trx) => put(trx, 'd'));
        await assert.rejects(db.transaction().execute((trx) => put(trx, 'd')), (error: { code?: string }) => error.code === '23505');
        await db.transaction().execute((trx) => put(trx, 'e'));
        const ids = (await sql<{ id: string }>`select id from tx_t where id in ('d', 'e') order by id`.execute(database.handle.db)).rows;
        assert.deepEqual(ids, [{ id: 'd' }, { id: 'e' }]);
      });

      it('sends text holding a NUL as a parameter, so that it fails as it always did', async () => {
        const db = open();
        const put = (on: typeof db, id: string) => on.insertInto('tx_t' as any).values({ id, n: 1, flag: true, note: null }).execute();
        await db.transaction().execute((trx) => put(trx, 'g'));
        const texts: string[] = [];
        recording = texts;
        await assert.rejects(db.transaction().execute((trx) => put(trx, 'nul\u0000')), (error: { code?: string }) => error.code === '22021')
          .finally(() => { recording = null; });
        assert.equal(texts[0], 'begin');
      });

      it('writes parameters into a statement only where they are placeholders, never inside a quoted identifier', async () => {
        // Without names every statement is written out; a column whose name holds `$1`.
        const db = open(false);
        await sql`create table tx_odd ("a$1" text, id text)`.execute(database.handle.db);
        const tricky = '" || current_user || "';
        await sql`insert into tx_odd values ('v', ${tricky})`.execute(database.handle.db);
        const find = (on: typeof db) => on.selectFrom('tx_odd' as any).select('a$1' as any).where('id', '=', tricky).execute();
        let found: unknown;
        const texts = await sent(() => db.transaction().execute(async (trx) => { found = await find(trx); }));
        assert.deepEqual(found, [{ a$1: 'v' }]);
        assert.match(texts[0], /^begin; select "a\$1" from "tx_odd" where "id" = '" \|\| current_user \|\| "'$/);
      });

      it('writes out arrays, sends BEGIN alone before a value it does not write out, and nothing for a transaction that ran no statement', async () => {
        const db = open();
        const find = (on: typeof db, ids: string[]) => sql<{ id: string }>`select id from tx_t where id = any(${ids}) order by id`.execute(on);
        await sql`insert into tx_t (id) values (${'x"y\\'})`.execute(db);
        await find(db, ['a']);
        let found: unknown;
        const texts = await sent(() => db.transaction().execute(async (trx) => { found = (await find(trx, ['a', 'b', 'x"y\\', null as never])).rows; }));
        assert.match(texts[0], /^begin; execute supplyline_\d+\(/);
        assert.deepEqual(found, [{ id: 'a' }, { id: 'b' }, { id: 'x"y\\' }]);

        const since = (on: typeof db) => sql<{ id: string }>`select id from tx_t where id = 'a' and ${new Date(0)}::timestamptz < now()`.execute(on);
        await since(db);
        const dated = await sent(() => db.transaction().execute((trx) => since(trx)));
        assert.deepEqual([dated[0], dated.at(-1)], ['begin', 'commit']);

        assert.deepEqual(await sent(() => db.transaction().execute(async () => 'nothing')), []);
        await assert.rejects(db.transaction().execute(async () => { throw new Error('before any statement'); }), /before any statement/);
        // The connection holds no transaction: a statement outside one commits at once.
        await sql`insert into tx_t (id) values ('f')`.execute(db);
        assert.deepEqual((await sql<{ id: string }>`select id from tx_t where id = 'f'`.execute(database.handle.db)).rows, [{ id: 'f' }]);
      });
    });
  });
}
