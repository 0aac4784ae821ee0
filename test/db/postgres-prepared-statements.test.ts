import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import { backends, createTestDatabase, type TestDatabase } from '../helpers/context.ts';

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
      (
        await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)
      ).rows
        .filter((r) => !r.statement.includes('pg_prepared_statements'))
        .map((r) => r.name);

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
      const find = (a: number) =>
        db
          .selectFrom('prep_t' as any)
          .select('a')
          .where('a', '=', a)
          .execute();
      assert.deepEqual(await find(1), [{ a: 1 }]);
      assert.deepEqual(await find(2), [{ a: 2 }]);
      const names = await preparedNames(db);
      assert.equal(names.filter((n) => n.startsWith('supplyline_')).length, 1, JSON.stringify(names));
    });

    it('leaves statements unnamed when turned off, and bulk statements always', async () => {
      const off = open(false);
      await off
        .selectFrom('prep_t' as any)
        .select('a')
        .where('a', '=', 1)
        .execute();
      assert.deepEqual(
        (await preparedNames(off)).filter((n) => n.startsWith('supplyline_')),
        [],
      );

      // Up to 128 parameters (an order's few items) a statement is named; a bulk statement beyond that is not.
      const inList = (on: typeof off, length: number) =>
        on
          .selectFrom('prep_t' as any)
          .select('a')
          .where(
            'a',
            'in',
            Array.from({ length }, (_, i) => i),
          )
          .execute();
      const bulk = open();
      assert.equal((await inList(bulk, 129)).length, 2);
      assert.deepEqual(
        (await preparedNames(bulk)).filter((n) => n.startsWith('supplyline_')),
        [],
      );
      const small = open();
      assert.equal((await inList(small, 128)).length, 2);
      assert.equal((await preparedNames(small)).filter((n) => n.startsWith('supplyline_')).length, 1);
    });

    it('prepares a select * again after another instance adds a column', async () => {
      const db = open();
      const all = (on: typeof db = db) =>
        on
          .selectFrom('prep_t' as any)
          .selectAll()
          .where('a', '=', 1)
          .execute();
      assert.deepEqual(await all(), [{ a: 1 }]);
      await sql`alter table prep_t add column b text not null default 'x'`.execute(database.handle.db);
      assert.deepEqual(await all(), [{ a: 1, b: 'x' }], 'outside a transaction the query is retried at once');

      await sql`alter table prep_t add column c integer not null default 7`.execute(database.handle.db);
      await assert.rejects(
        db.transaction().execute((trx) => all(trx)),
        /cached plan must not change result type/,
        'inside a transaction the caller retries',
      );
      assert.deepEqual(await db.transaction().execute((trx) => all(trx)), [{ a: 1, b: 'x', c: 7 }]);
    });
  });
}
