import { sql, type Kysely } from 'kysely';
import type { Dialect } from './types.ts';

/**
 * The migrations a database has run, read before Kysely's migrator, for two cases it cannot settle
 * (decision 0007): a migration renamed after databases ran it is taken back so its new version runs
 * (both built only derived data), and a database a newer release migrated, whose unknown migrations
 * all come after every known one, is started without migrating (a rollback).
 */

interface Renamed {
  /** The name a database may have run. */
  from: string;
  /** Undoes what that version did where the new one does it differently. */
  undo?: (db: Kysely<any>) => Promise<void>;
}

export const RENAMED: Renamed[] = [
  {
    // Built order_deleted_counts and the phase/status indexes without deleted_at, and dropped the
    // index 0003 made; 0019-deleted-orders does all that its own way, and more.
    from: '0019-deleted-order-counts',
    async undo(db) {
      await sql`drop table if exists order_deleted_counts`.execute(db);
      for (const index of ['orders_all_phase_status_idx', 'orders_all_phase_idx', 'orders_all_status_idx']) {
        await sql`drop index if exists ${sql.raw(index)}`.execute(db);
      }
      await sql`create index if not exists orders_business_phase_status_idx
        on orders (business_id, phase, status, created_at desc)`.execute(db);
    },
  },
  // Made deflate_stored_block(), which 0026-commit-values makes again (create or replace) beside commit_value().
  { from: '0026-deflate-stored-block' },
];

const TABLE = 'kysely_migration';

/** Whether the table exists, in the schema the migrator uses. */
export async function hasTable(
  db: Kysely<any>,
  dialect: Dialect,
  schema: string | undefined,
  table: string,
): Promise<boolean> {
  return dialect === 'postgres'
    ? (
        await sql<{
          n: number;
        }>`select count(*)::int as n from information_schema.tables where table_schema = ${schema!} and table_name = ${table}`.execute(
          db,
        )
      ).rows[0].n > 0
    : (
        await sql<{
          n: number;
        }>`select count(*) as n from sqlite_master where type = 'table' and name = ${table}`.execute(db)
      ).rows[0].n > 0;
}

/** The names of the migrations the database has run, in the schema the migrator uses; none when it never ran. */
export async function executedMigrations(
  db: Kysely<any>,
  dialect: Dialect,
  schema: string | undefined,
): Promise<string[]> {
  if (!(await hasTable(db, dialect, schema, TABLE))) return [];
  return (await sql<{ name: string }>`select name from ${sql.table(TABLE)} order by name`.execute(db)).rows.map(
    (r) => r.name,
  );
}

/** Takes back each renamed migration the database ran under its old name; true when there was one. */
export async function takeBackRenamed(db: Kysely<any>, executed: string[]): Promise<boolean> {
  let took = false;
  for (const renamed of RENAMED) {
    if (!executed.includes(renamed.from)) continue;
    // Each step can run again: a start that stops half-way is finished by the next.
    await renamed.undo?.(db);
    await sql`delete from ${sql.table(TABLE)} where name = ${renamed.from}`.execute(db);
    took = true;
  }
  return took;
}

/**
 * Whether the database was migrated by a newer release (a rollback): it has run every migration
 * this release knows, and the ones it does not know all come after them. Throws when it holds
 * migrations this release does not know among its own: then it is neither older nor newer.
 */
export function migratedByNewerRelease(executed: string[], known: string[]): boolean {
  const unknown = executed.filter((name) => !known.includes(name) && !RENAMED.some((r) => r.from === name));
  if (unknown.length === 0) return false;
  const last = [...known].sort().at(-1)!;
  const missing = known.filter((name) => !executed.includes(name));
  if (unknown.every((name) => name > last) && missing.length === 0) return true;
  throw new Error(
    `The database has run migrations this release does not know (${unknown.join(', ')})` +
      (missing.length > 0 ? ` and not ${missing.join(', ')}` : '') +
      ': it was made by another line of releases. Restore a backup made by this release.',
  );
}
