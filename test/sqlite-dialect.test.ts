import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Kysely, sql } from 'kysely';
import { createDatabase } from '../src/db/connection.ts';
import { QueuedSqliteDialect } from '../src/db/sqlite-dialect.ts';
import { openSqliteDatabase } from '../src/db/sqlite-driver.ts';

describe('SQLite connection queue', () => {
  it('serves concurrent transactions first come, first served', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-fifo-'));
    const handle = createDatabase(`sqlite:${join(dir, 'db.sqlite')}`);
    try {
      const finished: number[] = [];
      await Promise.all(Array.from({ length: 60 }, (_, i) => handle.db.transaction().execute(async (trx) => {
        await sql`select ${i}`.execute(trx);
        await new Promise((r) => setImmediate(r));
        await sql`select ${i}`.execute(trx);
        finished.push(i);
      })));
      assert.deepEqual(finished, Array.from({ length: 60 }, (_, i) => i));
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite statement cache', () => {
  function open() {
    const sqlite = openSqliteDatabase(':memory:');
    const prepared: string[] = [];
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((source: string) => {
      prepared.push(source);
      return prepare(source);
    }) as typeof sqlite.prepare;
    return { db: new Kysely<any>({ dialect: new QueuedSqliteDialect(sqlite) }), prepared };
  }

  it('prepares each distinct statement once and reuses it with new parameters', async () => {
    const { db, prepared } = open();
    try {
      await sql`create table t (a integer, b text)`.execute(db);
      for (let i = 0; i < 5; i++) await db.insertInto('t').values({ a: i, b: `v${i}` }).execute();
      const rows = [];
      for (let i = 0; i < 5; i++) rows.push(await db.selectFrom('t').select('b').where('a', '=', i).executeTakeFirst());
      assert.deepEqual(rows.map((r) => r?.b), ['v0', 'v1', 'v2', 'v3', 'v4']);
      assert.equal(prepared.filter((s) => s.startsWith('insert')).length, 1);
      assert.equal(prepared.filter((s) => s.startsWith('select')).length, 1);
    } finally {
      await db.destroy();
    }
  });

  it('reports changed rows and follows schema changes under a cached statement', async () => {
    const { db } = open();
    try {
      await sql`create table t (a integer)`.execute(db);
      await db.insertInto('t').values([{ a: 1 }, { a: 2 }]).execute();
      const updated = await db.updateTable('t').set({ a: 3 }).where('a', '>', 0).executeTakeFirst();
      assert.equal(updated.numUpdatedRows, 2n);
      assert.deepEqual(await db.selectFrom('t').selectAll().limit(1).execute(), [{ a: 3 }]);
      await sql`alter table t add column b text default 'x'`.execute(db);
      assert.deepEqual(await db.selectFrom('t').selectAll().limit(1).execute(), [{ a: 3, b: 'x' }]);
    } finally {
      await db.destroy();
    }
  });

  it('keeps a bounded number of statements, evicting the least recently used', async () => {
    const { db, prepared } = open();
    try {
      for (let i = 0; i < 1001; i++) await sql.raw(`select ${i} as n`).execute(db);
      await sql.raw('select 1000 as n').execute(db); // still cached
      await sql.raw('select 0 as n').execute(db); // evicted by the 1001st, prepared again
      assert.equal(prepared.length, 1002);
      assert.equal(prepared.at(-1), 'select 0 as n');
    } finally {
      await db.destroy();
    }
  });
});
