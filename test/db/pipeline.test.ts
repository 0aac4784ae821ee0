import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { sendRead, sendWrite, sentWritesDone } from '../../src/db/pipeline.ts';
import { readAtOneMoment } from '../../src/db/dialect.ts';
import { createDatabase } from '../../src/db/connection.ts';
import type { Db } from '../../src/db/types.ts';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * Writes sent ahead (src/db/pipeline.ts): on PostgreSQL, in a transaction, a write whose answer is
 * not read goes on its way and the transaction goes on; its answer is checked by the next statement
 * waited for, or the COMMIT. On SQLite, and outside a transaction, it is any statement.
 */
describeEachBackend('writes sent ahead', (ctx) => {
  const postgres = () => ctx().backend === 'postgres';
  const count = async (n: number) =>
    Number((await sql<{ c: number }>`select count(*) as c from ahead_rows where n = ${n}`.execute(ctx().db)).rows[0].c);

  before(async () => {
    await sql`create table ahead_rows (n integer not null)`.execute(ctx().db);
  });

  it('in a transaction, goes on before the database has answered (PostgreSQL), and is kept by the commit', async (t) => {
    if (!postgres()) return t.diagnostic('SQLite answers every statement as it runs');
    // Another session holds a lock the write must wait for: it cannot be answered until that ends.
    const other = new pg.Client({ connectionString: ctx().database.url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock(4242)');
      let sent = false;
      const written = ctx()
        .db.transaction()
        .execute(async (trx) => {
          await sendWrite(trx, sql`insert into ahead_rows (n) select 1 from (select pg_advisory_xact_lock(4242)) l`);
          sent = true;
          await sentWritesDone(trx);
        });
      const deadline = Date.now() + 10_000;
      while (!sent && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(sent, true, 'the write went on while its statement waited for the lock');
      assert.equal(await count(1), 0);
      await other.query('commit');
      await written;
      assert.equal(await count(1), 1);
    } finally {
      await other.end();
    }
  });

  it('fails the next statement waited for with its own error, and the transaction keeps nothing', async () => {
    await assert.rejects(
      ctx()
        .db.transaction()
        .execute(async (trx) => {
          await sql`insert into ahead_rows (n) values (2)`.execute(trx);
          await sendWrite(trx, sql`insert into ahead_rows (n) values (null)`);
          await sql`select 1`.execute(trx);
        }),
      /not[ -]null/i,
    );
    assert.equal(await count(2), 0);
    // The pool's connections are whole afterwards.
    await Promise.all(Array.from({ length: 12 }, () => sql`select 1`.execute(ctx().db)));
  });

  it('fails the commit when it was the last statement', async () => {
    await assert.rejects(
      ctx()
        .db.transaction()
        .execute(async (trx) => {
          await sql`insert into ahead_rows (n) values (3)`.execute(trx);
          await sendWrite(trx, sql`insert into ahead_rows (n) values (null)`);
        }),
      /not[ -]null/i,
    );
    assert.equal(await count(3), 0);
  });

  it('fails a COMMIT that PostgreSQL answers with ROLLBACK, after a caller went on past a failed statement', async (t) => {
    if (!postgres()) return t.diagnostic('SQLite undoes the failed statement alone, and commits the rest');
    await assert.rejects(
      ctx()
        .db.transaction()
        .execute(async (trx) => {
          await sql`insert into ahead_rows (n) values (5)`.execute(trx);
          await sendWrite(trx, sql`insert into ahead_rows (n) values (null)`);
          await sql`select 1`.execute(trx).catch(() => {});
        }),
      /rolled back/,
    );
    assert.equal(await count(5), 0);
  });

  it('outside a transaction, runs and fails as any statement', async () => {
    await assert.rejects(sendWrite(ctx().db, sql`insert into ahead_rows (n) values (null)`), /not[ -]null/i);
    await sendWrite(ctx().db, sql`insert into ahead_rows (n) values (4)`);
    assert.equal(await count(4), 1);
  });
  it('sendRead: in a transaction, goes on before the database has answered (PostgreSQL); its answer is read later', async (t) => {
    const other = postgres() ? new pg.Client({ connectionString: ctx().database.url }) : undefined;
    try {
      await other?.connect();
      await other?.query('begin');
      await other?.query('select pg_advisory_xact_lock(4343)');
      let sent = false;
      const read = ctx()
        .db.transaction()
        .execute(async (trx) => {
          const lock = other ? sql`, pg_advisory_xact_lock(4343)` : sql``;
          const first = await sendRead<{ n: number }>(trx, sql`select 7 as n ${lock}`);
          sent = true;
          const second = await sql<{ n: number }>`select 8 as n`.execute(trx);
          return [Number((await first.answer).rows[0].n), Number(second.rows[0].n)];
        });
      if (other) {
        const deadline = Date.now() + 10_000;
        while (!sent && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(sent, true, 'the write went on while the statement waited for the lock');
        await other.query('commit');
      } else t.diagnostic('SQLite answers every statement as it runs');
      assert.deepEqual(await read, [7, 8]);
    } finally {
      await other?.end();
    }
  });

  it("sendRead: its failure is its answer's, and fails the next statement waited for", async () => {
    await assert.rejects(
      ctx()
        .db.transaction()
        .execute(async (trx) => {
          const failing = await sendRead(trx, sql`insert into ahead_rows (n) values (null) returning n`);
          await failing.answer;
        }),
      /not[ -]null/i,
    );
    await assert.rejects(
      ctx()
        .db.transaction()
        .execute(async (trx) => {
          const failing = await sendRead(trx, sql`insert into ahead_rows (n) values (null) returning n`);
          failing.answer.catch(() => {});
          await sql`select 1`.execute(trx);
        }),
      /not[ -]null/i,
    );
  });

  it('a write transaction plans its named statements once (PostgreSQL); a read at one moment, and a statement alone, as PostgreSQL chooses', async (t) => {
    if (!postgres()) return t.diagnostic('SQLite prepares each statement once, and plans it then');
    const mode = async (db: Db) =>
      (await sql<{ plan_cache_mode: string }>`show plan_cache_mode`.execute(db)).rows[0].plan_cache_mode;
    assert.equal(
      await ctx()
        .db.transaction()
        .execute((trx) => mode(trx)),
      'force_generic_plan',
    );
    assert.equal(await readAtOneMoment(ctx().db, (db) => mode(db)), 'auto');
    // The setting ends with its transaction: the connection's next user (a pooler's next client) plans as before.
    assert.deepEqual(await Promise.all(Array.from({ length: 12 }, () => mode(ctx().db))), Array(12).fill('auto'));
  });

  it("a write transaction sends its BEGIN and the plans' setting as one query (PostgreSQL)", async (t) => {
    if (!postgres()) return t.diagnostic('SQLite sends nothing');
    const own = createDatabase(ctx().database.url, { schema: ctx().database.schema });
    try {
      const sent = () => own.poolStats!().statements;
      const before = sent();
      await own.db.transaction().execute((trx) => sql`select 1`.execute(trx));
      // BEGIN with the setting, the statement, COMMIT.
      assert.equal(sent() - before, 3);
    } finally {
      await own.close();
    }
  });
});
