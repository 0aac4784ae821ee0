import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { statement } from '../../src/db/statement.ts';
import { inList, listOf } from '../../src/db/dialect.ts';
import { backends, createTestDatabase, type TestDatabase } from '../helpers/context.ts';

type Db = TestDatabase['handle']['db'];

for (const backend of backends) {
  describe(`[${backend}] statements built once per shape (src/db/statement.ts)`, () => {
    let database: TestDatabase;
    const hostile = "O'Brien \\'); drop table st_t; -- \u00e9 東京 🚚";
    let builds = 0;

    // Counts its builds: a shape is built once, whatever the values.
    const update = statement((db: Db, v: { id: string; set: { n?: number; tags?: string | null } }) => {
      builds++;
      return db
        .updateTable('st_t' as any)
        .set(v.set)
        .where('id', '=', v.id)
        .returningAll();
    });
    const find = statement((db: Db, v: { id: string; min: number }, order?: 'asc' | 'desc') =>
      db
        .selectFrom('st_t' as any)
        .selectAll()
        .where('id', '>=', v.id)
        .where('n', '>=', v.min)
        .orderBy('id', order ?? 'asc'),
    );

    before(async () => {
      database = await createTestDatabase(backend);
      const { db } = database.handle;
      await sql`create table st_t (id text primary key, n integer, tags text)`.execute(db);
      await db
        .insertInto('st_t' as any)
        .values([
          { id: 'a', n: 1, tags: null },
          { id: 'b', n: 2, tags: 'x' },
          { id: 'c', n: 3, tags: 'y' },
        ])
        .execute();
    });
    after(async () => {
      await database.handle.close();
      await database.drop();
    });

    it("binds each call's values to the text built once, and answers as the builder would", async () => {
      const { db } = database.handle;
      builds = 0;
      const first = update(db, { id: 'a', set: { n: 10, tags: hostile } });
      const second = update(db, { id: 'b', set: { n: 20, tags: null } });
      assert.equal(builds, 1);
      assert.equal(first.sql, second.sql);
      assert.deepEqual(first.parameters, [10, hostile, 'a']);
      assert.deepEqual(second.parameters, [20, null, 'b']);
      assert.deepEqual((await db.executeQuery(first)).rows, [{ id: 'a', n: 10, tags: hostile }]);
      assert.deepEqual((await db.executeQuery(second)).rows, [{ id: 'b', n: 20, tags: null }]);
      const built = db
        .updateTable('st_t' as any)
        .set({ n: 20, tags: null })
        .where('id', '=', 'b')
        .returningAll()
        .compile();
      assert.equal(second.sql, built.sql);
    });

    it('builds another text for another set of columns, leaving undefined ones out as Kysely does', async () => {
      const { db } = database.handle;
      builds = 0;
      const one = update(db, { id: 'c', set: { n: 30 } });
      const alsoOne = update(db, { id: 'c', set: { n: 31, tags: undefined } });
      const two = update(db, { id: 'c', set: { n: 32, tags: 'z' } });
      assert.equal(builds, 1, 'the two-column shape was built by the first test');
      assert.equal(one.sql, alsoOne.sql);
      assert.notEqual(one.sql, two.sql);
      assert.deepEqual(alsoOne.parameters, [31, 'c']);
      assert.deepEqual((await db.executeQuery(alsoOne)).rows, [{ id: 'c', n: 31, tags: 'y' }]);
    });

    it('builds another text per variant, and runs in a transaction', async () => {
      const { db } = database.handle;
      const asc = find(db, { id: 'a', min: 2 });
      const desc = find(db, { id: 'a', min: 2 }, 'desc');
      assert.notEqual(asc.sql, desc.sql);
      const [up, down] = await db
        .transaction()
        .execute(async (trx) => [
          (await trx.executeQuery(find(trx, { id: 'a', min: 15 }))).rows,
          (await trx.executeQuery(find(trx, { id: 'b', min: 0 }, 'desc'))).rows,
        ]);
      assert.deepEqual(
        (up as Array<{ id: string }>).map((r) => r.id),
        ['b', 'c'],
      );
      assert.deepEqual(
        (down as Array<{ id: string }>).map((r) => r.id),
        ['c', 'b'],
      );
    });

    it('binds rows to insert, one shape per number of rows and their columns', async () => {
      const { db } = database.handle;
      const insert = statement((db: Db, v: { rows: Array<{ id: string; n?: number; tags?: string | null }> }) =>
        db
          .insertInto('st_t' as any)
          .values(v.rows)
          .returningAll(),
      );
      const two = insert(db, {
        rows: [
          { id: 'r1', n: 1, tags: hostile },
          { id: 'r2', n: 2, tags: null },
        ],
      });
      const twoMore = insert(db, {
        rows: [
          { id: 'r3', n: 3, tags: 'a' },
          { id: 'r4', n: 4, tags: 'b' },
        ],
      });
      const three = insert(db, {
        rows: [
          { id: 'r5', n: 5 },
          { id: 'r6', n: 6 },
          { id: 'r7', n: 7 },
        ],
      });
      assert.equal(two.sql, twoMore.sql);
      assert.notEqual(two.sql, three.sql);
      assert.deepEqual(twoMore.parameters, ['r3', 3, 'a', 'r4', 4, 'b']);
      for (const q of [two, twoMore, three]) await db.executeQuery(q);
      const rows = await db
        .selectFrom('st_t' as any)
        .selectAll()
        .where('id', 'like', 'r%')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r: any) => [r.id, r.n, r.tags]),
        [
          ['r1', 1, hostile],
          ['r2', 2, null],
          ['r3', 3, 'a'],
          ['r4', 4, 'b'],
          ['r5', 5, null],
          ['r6', 6, null],
          ['r7', 7, null],
        ],
      );
    });

    it('matches a list of values: one text for any length on PostgreSQL, one per length on SQLite', async () => {
      const { db } = database.handle;
      const among = statement((db: Db, v: { ids: string[] | Record<string, string> }) =>
        db
          .selectFrom('st_t' as any)
          .select('id')
          .where(inList(db, 'id', v.ids))
          .orderBy('id'),
      );
      const one = among(db, { ids: listOf(db, ['a']) });
      const three = among(db, { ids: listOf(db, ['c', 'a', hostile]) });
      assert.equal(one.sql === three.sql, backend === 'postgres');
      assert.deepEqual((await db.executeQuery(one)).rows, [{ id: 'a' }]);
      assert.deepEqual((await db.executeQuery(three)).rows, [{ id: 'a' }, { id: 'c' }]);
    });

    it('compiles every time on a database with plugins, so that they see each query', async () => {
      const { db } = database.handle;
      let seen = 0;
      const counting = db.withPlugin({
        transformQuery: (args) => {
          seen++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      find(db, { id: 'a', min: 0 });
      find(counting, { id: 'a', min: 0 });
      const { rows } = await counting.executeQuery(find(counting, { id: 'b', min: 0 }));
      assert.equal(seen, 2);
      assert.deepEqual(rows.map((r: any) => r.id).slice(0, 2), ['b', 'c']);
    });

    it('refuses a build that does not use a value as a parameter, rather than bind the wrong value', () => {
      const { db } = database.handle;
      // The stand-in has no length: the count would be the constant 0 for every call.
      const looksInside = statement((db: Db, v: { ids: string[] }) =>
        db
          .selectFrom('st_t' as any)
          .selectAll()
          .where('n', '>=', v.ids.length ?? 0),
      );
      assert.throws(() => looksInside(db, { ids: ['a'] }), /1 value\(s\) did not become parameters/);
      const unused = statement((db: Db, v: { id: string; n: number }) =>
        db
          .selectFrom('st_t' as any)
          .selectAll()
          .where('id', '=', v.id),
      );
      assert.throws(() => unused(db, { id: 'a', n: 1 }), /1 value\(s\) did not become parameters/);
    });
  });
}
