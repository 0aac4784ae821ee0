import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, migrationNames, RELEASE, refuseBesideEarlierInstances } from '../../src/db/migrate.ts';
import { GONE_AFTER_MS, registerInstance } from '../../src/db/instances.ts';
import { RENAMED } from '../../src/db/migration-history.ts';
import { backends } from '../helpers/context.ts';
import { withEmptyDatabase } from '../helpers/migrations.ts';

const DIR = 'src/db/migrations';
/** Every released migration's name and the SHA-256 of its file: a release's migrations never change. */
const RELEASED: Record<string, string> = JSON.parse(readFileSync('test/fixtures/released-migrations.json', 'utf8'));

describe('released migrations', () => {
  it('never change name or content; a new one is added to test/fixtures/released-migrations.json when it is released', () => {
    const files = Object.fromEntries(
      readdirSync(DIR)
        .sort()
        .map((f) => [
          f.replace(/\.ts$/, ''),
          createHash('sha256')
            .update(readFileSync(`${DIR}/${f}`))
            .digest('hex'),
        ]),
    );
    for (const [name, hash] of Object.entries(RELEASED)) {
      assert.ok(name in files, `released migration ${name} was renamed or removed`);
      assert.equal(files[name], hash, `released migration ${name} was changed: write a new migration instead`);
    }
    assert.deepEqual(
      Object.keys(files).filter((name) => !(name in RELEASED)),
      [],
      'a migration not yet in the manifest',
    );
    // The migrator runs exactly these, under the names of their files.
    for (const dialect of ['sqlite', 'postgres'] as const)
      assert.deepEqual(migrationNames(dialect), Object.keys(files), dialect);
    // The renamed ones' old names are never reused.
    for (const { from } of RENAMED) assert.ok(!(from in files), from);
  });
});

/** The tables and indexes of a database, to compare a taken-back history with a fresh one. */
async function schemaOf(db: Kysely<any>, dialect: string): Promise<string[]> {
  const rows =
    dialect === 'postgres'
      ? (
          await sql<{
            name: string;
          }>`select 'table ' || table_name as name from information_schema.tables where table_schema = current_schema()
        union all select 'index ' || indexname || ' ' || indexdef from pg_indexes where schemaname = current_schema()
        union all select 'function ' || routine_name from information_schema.routines where routine_schema = current_schema()`.execute(
            db,
          )
        ).rows
      : (
          await sql<{
            name: string;
          }>`select type || ' ' || name || ' ' || coalesce(sql, '') as name from sqlite_master where name not like 'sqlite_%'`.execute(
            db,
          )
        ).rows;
  // The index definitions name the schema on PostgreSQL; each test database has its own.
  return rows.map((r) => r.name.replace(/ ON [\w.]+\./, ' ON ').replace(/\s+/g, ' ')).sort();
}

const record = (db: Kysely<any>, name: string) =>
  sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(db);

for (const backend of backends) {
  describe(`[${backend}] migration history`, () => {
    it('takes back 0019-deleted-order-counts, which some databases ran before it was renamed and changed, and ends as a fresh database', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const [old, fresh] = [open(), open()];
        try {
          await migrateToLatest(old.db, old.dialect, '0018-order-phase-status-indexes');
          const db = old.db as unknown as Kysely<any>;
          // What that version did (a frozen copy of it), and its record.
          await db.schema
            .createTable('order_deleted_counts')
            .addColumn('business_id', 'text', (c) => c.notNull())
            .addColumn('day', 'text', (c) => c.notNull())
            .addColumn('phase', 'text', (c) => c.notNull())
            .addColumn('status', 'text', (c) => c.notNull())
            .addColumn('shard', 'integer', (c) => c.notNull())
            .addColumn('n', 'bigint', (c) => c.notNull())
            .addPrimaryKeyConstraint('order_deleted_counts_pk', ['business_id', 'day', 'phase', 'status', 'shard'])
            .execute();
          await sql`drop index orders_business_phase_status_idx`.execute(db);
          await sql`create index orders_all_phase_status_idx on orders (business_id, phase, status, created_at desc, id desc)`.execute(
            db,
          );
          await sql`create index orders_all_phase_idx on orders (business_id, phase, created_at desc, id desc)`.execute(
            db,
          );
          await sql`create index orders_all_status_idx on orders (business_id, status, created_at desc, id desc)`.execute(
            db,
          );
          await record(db, '0019-deleted-order-counts');

          const applied = await migrateToLatest(old.db, old.dialect);
          assert.equal(applied[0], '0019-deleted-orders');
          await migrateToLatest(fresh.db, fresh.dialect);
          assert.deepEqual(await schemaOf(db, backend), await schemaOf(fresh.db as never, backend));
        } finally {
          await Promise.all([old.close(), fresh.close()]);
        }
      });
    });

    it('takes back 0026-deflate-stored-block in the same way', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const [old, fresh] = [open(), open()];
        try {
          await migrateToLatest(old.db, old.dialect, '0025-counts-without-rowid');
          const db = old.db as unknown as Kysely<any>;
          if (backend === 'postgres') {
            await sql`create or replace function deflate_stored_block(t text) returns bytea language sql immutable strict as $$ select convert_to(t, 'UTF8') $$`.execute(
              db,
            );
          }
          await record(db, '0026-deflate-stored-block');
          const applied = await migrateToLatest(old.db, old.dialect);
          assert.equal(applied[0], '0026-commit-values');
          await migrateToLatest(fresh.db, fresh.dialect);
          assert.deepEqual(await schemaOf(db, backend), await schemaOf(fresh.db as never, backend));
        } finally {
          await Promise.all([old.close(), fresh.close()]);
        }
      });
    });

    it('starts on a database a newer release migrated (a rollback), and refuses one of another line of releases', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect);
          const db = handle.db as unknown as Kysely<any>;
          await record(db, '9999-a-later-release');
          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect), []);
          // One of ours not run, and one it does not know: neither older nor newer.
          await sql`delete from kysely_migration where name = '0030-order-lines-record-variants'`.execute(db);
          await assert.rejects(
            migrateToLatest(handle.db, handle.dialect),
            /does not know \(9999-a-later-release\) and not 0030-order-lines-record-variants/,
          );
        } finally {
          await handle.close();
        }
      });
    });

    it('refuses a migration that must not run beside an earlier release while an instance of one is seen, and runs it once it stopped', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect);
          const schema =
            backend === 'postgres'
              ? (await sql<{ s: string }>`select current_schema() as s`.execute(handle.db)).rows[0].s
              : undefined;
          const breaking = new Set(['9999-breaking']);
          const check = () =>
            refuseBesideEarlierInstances(handle.db, handle.dialect, schema, ['9999-breaking'], breaking);
          // An instance of this release is no obstacle; one of an earlier release is, while it is seen.
          const same = await registerInstance(handle.db, RELEASE);
          await check();
          let now = Date.now();
          const earlier = await registerInstance(handle.db, '0030-order-lines-record-variants', () => now);
          await assert.rejects(
            check(),
            /9999-breaking cannot run while instances of an earlier release use the database \(1 of release 0030-order-lines-record-variants\)\. Stop them/,
          );
          // A migration that may run beside it runs.
          await refuseBesideEarlierInstances(handle.db, handle.dialect, schema, ['9999-additive'], breaking);
          // Crashed (not seen for a while), or stopped (left): it no longer counts.
          now -= GONE_AFTER_MS + 1_000;
          await earlier.heartbeat();
          await check();
          now = Date.now();
          await earlier.heartbeat();
          await assert.rejects(check());
          await earlier.leave();
          await check();
          await same.leave();
          assert.equal((await handle.db.selectFrom('instances').selectAll().execute()).length, 0);
        } finally {
          await handle.close();
        }
      });
    });
  });
}
