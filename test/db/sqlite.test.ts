import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Kysely, sql } from 'kysely';
import { createDatabase } from '../../src/db/connection.ts';
import { QueuedSqliteDialect } from '../../src/db/sqlite-dialect.ts';
import { chooseSqliteDriver, openSqliteDatabase } from '../../src/db/sqlite-driver.ts';
import { startCheckpointer } from '../../src/db/sqlite-checkpointer.ts';

describe('SQLite connection queue', () => {
  it('serves concurrent transactions first come, first served', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-fifo-'));
    const handle = createDatabase(`sqlite:${join(dir, 'db.sqlite')}`);
    try {
      const finished: number[] = [];
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          handle.db.transaction().execute(async (trx) => {
            await sql`select ${i}`.execute(trx);
            await new Promise((r) => setImmediate(r));
            await sql`select ${i}`.execute(trx);
            finished.push(i);
          }),
        ),
      );
      assert.deepEqual(
        finished,
        Array.from({ length: 60 }, (_, i) => i),
      );
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite group commit', () => {
  /** A file database through the dialect, counting its commits, and a second connection to look from outside. */
  function open(setup?: (sqlite: ReturnType<typeof openSqliteDatabase>) => void) {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-group-'));
    const file = join(dir, 'db.sqlite');
    const sqlite = openSqliteDatabase(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('foreign_keys = ON');
    setup?.(sqlite);
    const outside = openSqliteDatabase(file);
    // Each commit, and how many rows t held after it (t may not exist yet).
    const counter = { commits: 0, rowsAfter: [] as number[] };
    const rows = () => {
      try {
        return (outside.prepare('select count(*) as c from t').get() as { c: number }).c;
      } catch {
        return 0;
      }
    };
    const db = new Kysely<any>({
      dialect: new QueuedSqliteDialect(sqlite, () => {
        counter.commits++;
        counter.rowsAfter.push(rows());
      }),
    });
    const seen = (n: number) => outside.prepare('select count(*) as c from t where n = ?').get(n) as { c: number };
    const close = async () => {
      outside.close();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    };
    return { db, sqlite, counter, seen, close };
  }
  /** Runs a test on a database of its own, and removes it afterwards. */
  async function onItsOwnDatabase(test: (opened: ReturnType<typeof open>) => Promise<void>) {
    const opened = open();
    try {
      await test(opened);
    } finally {
      await opened.close();
    }
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Fails instead of hanging the suite when a promise never settles. */
  const within = <T>(promise: Promise<T>, what: string) =>
    Promise.race([
      promise,
      sleep(3000).then(() => {
        throw new Error(`${what} did not settle in 3 s`);
      }),
    ]);
  /** Makes one statement fail as an I/O error would, while `failing.on`. */
  const failingStatement =
    (text: string, failing: { on: boolean }) => (sqlite: ReturnType<typeof openSqliteDatabase>) => {
      const prepare = sqlite.prepare.bind(sqlite);
      sqlite.prepare = ((source: string) => {
        if (failing.on && source === text) throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
        return prepare(source);
      }) as typeof sqlite.prepare;
    };
  const withDeferredKey = async (db: Kysely<any>) => {
    await sql`create table t (n integer)`.execute(db);
    await sql`create table parent (id integer primary key)`.execute(db);
    // A deferred foreign key is checked at COMMIT: the one way to make a commit fail on purpose.
    await sql`create table child (parent_id integer references parent (id) deferrable initially deferred)`.execute(db);
  };
  const write = (db: Kysely<any>, n: number, after?: () => void) =>
    db.transaction().execute(async (trx) => {
      await sql`insert into t (n) values (${n})`.execute(trx);
      await new Promise((r) => setImmediate(r));
      after?.();
    });

  it('commits writes that wait for each other together, and answers each only once its write is durable', async () => {
    await onItsOwnDatabase(async ({ db, counter, seen }) => {
      await sql`create table t (n integer)`.execute(db);
      const before = counter.commits;
      const visibleWhenAnswered: number[] = [];
      await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          write(db, n).then(() => {
            visibleWhenAnswered.push(seen(n).c);
          }),
        ),
      );
      assert.deepEqual(visibleWhenAnswered, Array(10).fill(1));
      assert.ok(counter.commits - before <= 2, `10 writes took ${counter.commits - before} commits`);
      // A write on its own commits at once.
      const lone = counter.commits;
      await write(db, 99);
      assert.equal(counter.commits, lone + 1);
      assert.equal(seen(99).c, 1);
    });
  });

  it('bounds a group at 16 writes, so the first write of a long queue is not kept waiting', async () => {
    await onItsOwnDatabase(async ({ db, counter }) => {
      await sql`create table t (n integer)`.execute(db);
      counter.rowsAfter.length = 0;
      await Promise.all(Array.from({ length: 48 }, (_, n) => write(db, n)));
      const sizes = counter.rowsAfter.map((n, i) => n - (i === 0 ? 0 : counter.rowsAfter[i - 1]));
      assert.equal(
        sizes.reduce((a, b) => a + b, 0),
        48,
      );
      assert.ok(Math.max(...sizes) === 16, `group sizes ${sizes}`);
    });
  });

  it('rolls back only the write that failed, and commits the rest of its group', async () => {
    await onItsOwnDatabase(async ({ db, seen }) => {
      await sql`create table t (n integer)`.execute(db);
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, (_, n) =>
          write(db, n, () => {
            if (n === 2) throw new Error('refused');
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
      );
      assert.equal((results[2] as PromiseRejectedResult).reason.message, 'refused');
      assert.deepEqual(
        [0, 1, 2, 3, 4, 5].map((n) => seen(n).c),
        [1, 1, 0, 1, 1, 1],
      );
    });
  });

  it('fails every write of a group whose commit fails, keeps none of them, and goes on afterwards', async () => {
    await onItsOwnDatabase(async ({ db, seen }) => {
      await withDeferredKey(db);
      const results = await Promise.allSettled(
        Array.from({ length: 4 }, (_, n) =>
          db.transaction().execute(async (trx) => {
            await sql`insert into t (n) values (${n})`.execute(trx);
            if (n === 1) await sql`insert into child (parent_id) values (42)`.execute(trx);
            await new Promise((r) => setImmediate(r));
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected', 'rejected', 'rejected'],
      );
      assert.deepEqual(
        [0, 1, 2, 3].map((n) => seen(n).c),
        [0, 0, 0, 0],
      );
      await write(db, 7);
      assert.equal(seen(7).c, 1);
    });
  });

  it('answers a write that failed only once the writes it read are durable, and with their failure if they fail', async () => {
    await onItsOwnDatabase(async ({ db, sqlite, seen }) => {
      await withDeferredKey(db);
      const first = db.transaction().execute(async (trx) => {
        await sql`insert into t (n) values (1)`.execute(trx);
        await sql`insert into child (parent_id) values (42)`.execute(trx); // its group's COMMIT fails
        await new Promise((r) => setImmediate(r));
      });
      let undecided: boolean | undefined;
      const second = db
        .transaction()
        .execute(async (trx) => {
          const {
            rows: [row],
          } = await sql<{ c: number }>`select count(*) as c from t where n = 1`.execute(trx);
          throw new Error(`n = 1 exists (${row.c})`);
        })
        .catch((error: Error) => {
          const onConnection = (sqlite.prepare('select count(*) as c from t where n = 1').get() as { c: number }).c;
          undecided = onConnection !== seen(1).c;
          return error.message;
        });
      const third = write(db, 3);
      const [a, b, c] = await within(Promise.allSettled([first, second, third]), 'the writes');
      assert.equal(a.status, 'rejected');
      assert.equal(undecided, false);
      // It read a row that never committed: it fails with the commit, not with what it concluded.
      assert.ok(b.status === 'fulfilled' && !b.value.startsWith('n = 1 exists'), JSON.stringify(b));
      assert.equal(seen(1).c, 0);
      assert.equal(c.status, 'fulfilled');
      assert.equal(seen(3).c, 1);
    });
  });

  it('keeps the statements of db.connection() that follow a transaction in it, when its write went on into a group', async () => {
    await onItsOwnDatabase(async ({ db, seen }) => {
      await sql`create table t (n integer)`.execute(db);
      const outer = db.connection().execute(async (connection) => {
        await connection.transaction().execute(async (trx) => {
          await sql`insert into t (n) values (1)`.execute(trx);
          await new Promise((r) => setImmediate(r));
        });
        await sleep(10);
        await sql`insert into t (n) values (100)`.execute(connection);
      });
      const read = db.selectFrom('t').selectAll().execute();
      const refused = db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into t (n) values (3)`.execute(trx);
          await sleep(40);
          throw new Error('refused');
        })
        .catch(() => 'refused');
      await within(Promise.all([outer, read, refused]), 'the connection scope');
      assert.deepEqual(
        [1, 3, 100].map((n) => seen(n).c),
        [1, 0, 1],
      );
    });
  });

  it('rolls the whole group back when a failed write cannot be undone alone, and goes on', async () => {
    const failing = { on: false };
    const { db, seen, close } = open(failingStatement('rollback to member', failing));
    try {
      await sql`create table t (n integer)`.execute(db);
      failing.on = true;
      const first = write(db, 1);
      const second = write(db, 2, () => {
        throw new Error('refused');
      });
      const results = await within(Promise.allSettled([first, second]), 'the writes');
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected'],
      );
      assert.deepEqual(
        [1, 2].map((n) => seen(n).c),
        [0, 0],
      );
      failing.on = false;
      await within(write(db, 3), 'a later write');
      assert.equal(seen(3).c, 1);
    } finally {
      await close();
    }
  });

  it('goes on after a failed COMMIT whose ROLLBACK fails too', async () => {
    const failing = { on: false };
    const { db, close } = open(failingStatement('rollback', failing));
    try {
      await withDeferredKey(db);
      failing.on = true;
      const first = db.transaction().execute(async (trx) => {
        await sql`insert into child (parent_id) values (42)`.execute(trx);
        await new Promise((r) => setImmediate(r));
      });
      const second = db.transaction().execute(async () => {
        throw new Error('refused');
      });
      const results = await within(Promise.allSettled([first, second]), 'the writes');
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected'],
      );
      failing.on = false;
      await within(db.selectFrom('t').selectAll().execute(), 'a later read');
    } finally {
      await close();
    }
  });

  it('commits the writes before a read that waits behind them, so it never sees one that could still fail', async () => {
    await onItsOwnDatabase(async ({ db, seen }) => {
      await sql`create table t (n integer)`.execute(db);
      const writes = Array.from({ length: 3 }, (_, n) => write(db, n));
      const read = db
        .selectFrom('t')
        .select((eb) => eb.fn.countAll().as('c'))
        .executeTakeFirstOrThrow()
        .then((row) => ({ counted: Number(row.c), durable: [0, 1, 2].map((n) => seen(n).c) }));
      const later = write(db, 3);
      const [result] = await Promise.all([read, ...writes, later]);
      assert.deepEqual(result, { counted: 3, durable: [1, 1, 1] });
      assert.equal(seen(3).c, 1);
    });
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
      for (let i = 0; i < 5; i++)
        await db
          .insertInto('t')
          .values({ a: i, b: `v${i}` })
          .execute();
      const rows = [];
      for (let i = 0; i < 5; i++) rows.push(await db.selectFrom('t').select('b').where('a', '=', i).executeTakeFirst());
      assert.deepEqual(
        rows.map((r) => r?.b),
        ['v0', 'v1', 'v2', 'v3', 'v4'],
      );
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
      await db
        .insertInto('t')
        .values([{ a: 1 }, { a: 2 }])
        .execute();
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

/** A second writer on the same file: another process (the CLI beside a server), held as a thread here. */
function holdWriteLock(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const driver = createRequire(import.meta.url).resolve(chooseSqliteDriver());
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    const db = new (require(workerData.driver))(workerData.file);
    db.exec('begin immediate');
    db.exec("insert into t (v) values ('other writer')");
    parentPort.postMessage('locked');
    setTimeout(() => { db.exec('commit'); db.close(); parentPort.close(); }, workerData.ms);`,
    { eval: true, workerData: { driver, file, ms } },
  );
  const released = new Promise<void>((resolve, reject) => {
    worker.once('exit', () => resolve());
    worker.once('error', reject);
  });
  return new Promise((resolve, reject) => {
    worker.once('message', () => resolve({ released }));
    worker.once('error', reject);
  });
}

describe('SQLite write transactions', () => {
  it('wait for another writer instead of failing when they read before they write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-immediate-'));
    const file = join(dir, 'db.sqlite');
    const handle = createDatabase(`sqlite:${file}`);
    try {
      await sql`create table t (id integer primary key, v text)`.execute(handle.db);
      const { released } = await holdWriteLock(file, 300);
      // A deferred transaction takes its read lock at the select and asks for the write lock at the
      // insert, where SQLite answers SQLITE_BUSY at once (no busy timeout) rather than risk a deadlock.
      await handle.db.transaction().execute(async (trx) => {
        await sql`select count(*) from t`.execute(trx);
        await sql`insert into t (v) values ('this writer')`.execute(trx);
      });
      await released;
      const rows = await sql<{ v: string }>`select v from t order by id`.execute(handle.db);
      assert.deepEqual(
        rows.rows.map((r) => r.v),
        ['other writer', 'this writer'],
      );
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite background checkpoints', () => {
  const walBytes = (file: string) => statSync(`${file}-wal`).size;

  it('keep the WAL short while the main connection never checkpoints, and hand back on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-checkpoint-'));
    const file = join(dir, 'db.sqlite');
    const handle = createDatabase(`sqlite:${file}`, { backgroundCheckpoints: { restartPages: 512 } });
    const main = openSqliteDatabase(file);
    try {
      assert.equal(await handle.checkpointer!.ready, true);
      const autocheckpoint = async () =>
        Number(Object.values((await sql`pragma wal_autocheckpoint`.execute(handle.db)).rows[0] as object)[0]);
      assert.equal(await autocheckpoint(), 0, 'the main connection leaves checkpoints to the thread');
      await sql`create table t (id integer primary key, v blob)`.execute(handle.db);
      // 40 MB in 400 transactions. Without checkpoints the WAL would hold all of it; the thread
      // copies it to the database, and from 2 MB (512 pages) on, the main connection finishes its
      // pass between two transactions, so the WAL starts again from its beginning.
      const written = 40 * 1024 * 1024;
      for (let i = 0; i < 400; i++) {
        await handle.db.transaction().execute(async (trx) => {
          for (let k = 0; k < 25; k++) await sql`insert into t (v) values (randomblob(4096))`.execute(trx);
        });
        // A server's writes come with gaps between them; so do these, for the thread to take its turns.
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(walBytes(file) < written / 2, `the WAL holds ${walBytes(file)} bytes after ${written} written`);
      const count = (main.prepare('select count(*) as n from t').get() as { n: number }).n;
      assert.equal(count, 10_000);
      await handle.checkpointer!.close();
      assert.equal(await autocheckpoint(), 1000, 'after the thread stops, the main connection checkpoints again');
    } finally {
      main.close();
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('stop cleanly when closed before the thread is ready', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-checkpoint-'));
    const handle = createDatabase(`sqlite:${join(dir, 'db.sqlite')}`, { backgroundCheckpoints: true });
    try {
      // A server whose migrations fail closes its database at once: close() must still return.
      await handle.close();
      assert.equal(await handle.checkpointer!.ready, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never turn a committed write into a failure when the finishing pass fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-checkpoint-'));
    const file = join(dir, 'db.sqlite');
    const sqlite = openSqliteDatabase(file);
    sqlite.pragma('journal_mode = WAL');
    // Every WAL asks for the finishing pass, and that pass fails as on a full disk.
    const checkpointer = startCheckpointer(sqlite, file, { restartPages: 1 });
    const pragma = sqlite.pragma.bind(sqlite);
    let failed = 0;
    sqlite.pragma = ((source: string, options?: object) => {
      if (source === 'wal_checkpoint(PASSIVE)') {
        failed++;
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' });
      }
      return pragma(source, options);
    }) as typeof sqlite.pragma;
    const db = new Kysely<any>({ dialect: new QueuedSqliteDialect(sqlite, () => checkpointer.afterCommit()) });
    try {
      assert.equal(await checkpointer.ready, true);
      await sql`create table t (id integer primary key)`.execute(db);
      for (let i = 0; i < 200 && failed < 2; i++) {
        await db.transaction().execute(async (trx) => {
          await sql`insert into t default values`.execute(trx);
        });
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(failed >= 2, 'the finishing pass was tried again after it failed');
      const rows = await sql<{ n: number }>`select count(*) as n from t`.execute(db);
      assert.ok(rows.rows[0].n >= 2);
    } finally {
      await checkpointer.close();
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
