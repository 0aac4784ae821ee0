import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { MIGRATION_LOCK_KEY } from '../../src/db/migration-lock.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const url = process.env.TEST_DATABASE_URL;

/**
 * The migration lock as an operator meets it when another session holds it: here a session-level
 * lock on an idle connection, as one left behind by a pooler. The wait is logged with who holds
 * it, and it ends, with a message saying how to clear it. (SQLite has no such lock.)
 */
describe('[postgres] waiting for the migration lock', { skip: url ? false : 'set TEST_DATABASE_URL' }, () => {
  let holder: pg.Client;
  let holderPid: number;
  let handle: DatabaseHandle;

  before(async () => {
    holder = new pg.Client({ connectionString: url, application_name: 'left-behind' });
    await holder.connect();
    holderPid = (await holder.query('select pg_backend_pid() as pid')).rows[0].pid;
    handle = createDatabase(url!);
  });
  after(async () => {
    await holder.end();
    await handle.close();
  });

  it('logs who holds it, goes on waiting, and migrates once it is let go', async () => {
    await holder.query(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    const logged: string[] = [];
    const applied = await migrateToLatest(handle.db, handle.dialect, undefined, {
      waitMs: 120_000,
      reportAfterMs: 100,
      log: (line) => {
        logged.push(line);
        void holder.query(`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
      },
    });
    assert.ok(applied.includes('0001-foundation'));
    assert.equal(logged.length, 1);
    assert.match(
      logged[0],
      new RegExp(`^Waiting for the migration lock, held by pid ${holderPid} \\(idle, application 'left-behind'`),
    );
  });

  it('gives up after the wait with a message naming the idle holder and how to end it', async () => {
    await holder.query(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await assert.rejects(migrateToLatest(handle.db, handle.dialect, undefined, { waitMs: 300 }), (error: Error) => {
        assert.match(
          error.message,
          new RegExp(`^Gave up waiting for the migration lock after \\d+ s: it is held by pid ${holderPid} \\(idle`),
        );
        assert.match(error.message, new RegExp(`select pg_terminate_backend\\(${holderPid}\\)`));
        return true;
      });
    } finally {
      await holder.query(`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  });

  it('`migrate` exits after MIGRATION_LOCK_WAIT_SECONDS with that message', async () => {
    await holder.query(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [...TYPESCRIPT, 'src/cli.ts', 'migrate'],
          { cwd: root, env: { ...process.env, DATABASE_URL: url, MIGRATION_LOCK_WAIT_SECONDS: '1' } },
          (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
        );
      });
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        new RegExp(`^Error: Gave up waiting for the migration lock after 1 s: it is held by pid ${holderPid} \\(idle`),
      );
    } finally {
      await holder.query(`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  });
});
