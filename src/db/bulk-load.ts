import { sql, type Kysely } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Database } from './types.ts';

/**
 * Runs a bulk load (the demo generator) with what suits it on each backend: SQLite's load
 * settings for its duration; on PostgreSQL, `vacuum (analyze)` of the loaded tables afterwards.
 */
export async function withBulkLoad<T>(db: Kysely<Database>, tables: readonly string[], load: () => Promise<T>): Promise<T> {
  if (dialectOf(db) === 'sqlite') return withSqliteLoadSettings(db, load);
  const result = await load();
  await vacuumAnalyze(db, tables);
  return result;
}

/**
 * SQLite settings for the duration of a bulk load, each restored afterwards:
 * - a 64 MB page cache: with the default 2 MB, the growing indexes spill out of it and are
 *   written again and again (several times slower). The load writes near the end of every index,
 *   so 64 MB holds what it touches: 256 MB was no faster at 200k orders (50.6 s against 56.9 s,
 *   on a busy machine) and cost 220 MB more of the 300 MB the demo may use;
 * - foreign keys off: they cost three primary-key lookups per order item, and the rows are
 *   consistent by construction (the test runs `pragma foreign_key_check`);
 * - a rollback journal instead of WAL when no other connection has the file open (the switch
 *   needs the file to itself; otherwise it stays WAL, slower but the same): WAL writes every page
 *   twice, to the log and at a checkpoint into the file, while a load mostly adds new pages, which
 *   a rollback journal does not copy at all (18.7k -> 21.3k orders/s at 300k orders). With
 *   synchronous=FULL meanwhile: a rollback journal on NORMAL can be corrupted by a power cut.
 */
async function withSqliteLoadSettings<T>(db: Kysely<Database>, load: () => Promise<T>): Promise<T> {
  const read = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0] as string | number;
  const saved = { cache_size: await read('cache_size'), synchronous: await read('synchronous') };
  await sql`pragma cache_size = -65536`.execute(db);
  await sql`pragma foreign_keys = off`.execute(db);
  let switched = false;
  if ((await read('journal_mode')) === 'wal') {
    // Another connection makes the switch fail with SQLITE_BUSY: at once, not after the busy timeout.
    const busyTimeout = await read('busy_timeout');
    await sql`pragma busy_timeout = 0`.execute(db);
    switched = await sql`pragma journal_mode = truncate`.execute(db).then(async () => (await read('journal_mode')) === 'truncate', () => false);
    await sql.raw(`pragma busy_timeout = ${Number(busyTimeout)}`).execute(db);
  }
  if (switched) await sql`pragma synchronous = full`.execute(db);
  try {
    return await load();
  } finally {
    if (switched) await sql`pragma journal_mode = wal`.execute(db);
    await sql.raw(`pragma synchronous = ${Number(saved.synchronous)}`).execute(db);
    await sql`pragma foreign_keys = on`.execute(db);
    await sql.raw(`pragma cache_size = ${Number(saved.cache_size)}`).execute(db);
  }
}

/**
 * PostgreSQL: freshly bulk-loaded tables have no planner statistics and no visibility map yet, so
 * plans are guesses and index-only scans still visit the table (list queries measured 3-5× slower
 * until autovacuum caught up). What an operator runs after a bulk load; outside any transaction.
 */
async function vacuumAnalyze(db: Kysely<Database>, tables: readonly string[]): Promise<void> {
  for (const table of tables) await sql`vacuum (analyze) ${sql.table(table)}`.execute(db);
}
