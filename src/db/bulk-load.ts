import { sql, type Kysely } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Database, Db } from './types.ts';

/** What a bulk load may do on this connection, besides inserting. */
export interface BulkLoad {
  /**
   * Whether one transaction may hold the whole load: always on PostgreSQL; on SQLite only in a
   * rollback journal (a WAL would grow by everything loaded before its first checkpoint).
   */
  oneTransaction: boolean;
}

/**
 * Runs a bulk load (the demo generator) with what suits it on each backend: SQLite's load
 * settings for its duration; on PostgreSQL, `vacuum (analyze)` of the loaded tables afterwards.
 */
export async function withBulkLoad<T>(
  db: Kysely<Database>,
  tables: readonly string[],
  load: (bulk: BulkLoad) => Promise<T>,
): Promise<T> {
  if (dialectOf(db) === 'sqlite') return withSqliteLoadSettings(db, (switched) => load({ oneTransaction: switched }));
  const result = await load({ oneTransaction: true });
  await vacuumAnalyze(db, tables);
  return result;
}

/** Something a bulk load can do without and make again afterwards: a statement each way. */
interface Deferred {
  drop: string;
  create: string;
}

/**
 * The non-unique indexes of the tables as the database holds them (so as the migrations made
 * them), with the statements that make them again. Unique ones and those of keys and constraints
 * stay: they are what the load's own rows are checked against.
 */
async function secondaryIndexes(db: Db, tables: readonly string[]): Promise<Deferred[]> {
  if (dialectOf(db) === 'postgres') {
    const { rows } = await sql<{
      name: string;
      sql: string;
    }>`select quote_ident(i.schemaname) || '.' || quote_ident(i.indexname) as name, i.indexdef as sql
      from pg_indexes i join pg_index x on x.indexrelid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass
      where i.schemaname = current_schema() and i.tablename in (${sql.join(tables)}) and not x.indisunique
      order by i.tablename, i.indexname`.execute(db);
    return rows.map((r) => ({ drop: `drop index ${r.name}`, create: r.sql }));
  }
  // origin 'c': made by CREATE INDEX, not by a key or a UNIQUE constraint (those have no SQL to drop).
  const { rows } = await sql<{
    name: string;
    sql: string;
  }>`select '"' || replace(m.name, '"', '""') || '"' as name, m.sql as sql from sqlite_master m
      join pragma_index_list(m.tbl_name) l on l.name = m.name
    where m.type = 'index' and m.tbl_name in (${sql.join(tables)}) and l.origin = 'c' and l."unique" = 0
    order by m.tbl_name, m.name`.execute(db);
  return rows.map((r) => ({ drop: `drop index ${r.name}`, create: r.sql }));
}

/**
 * PostgreSQL: the tables' foreign keys, as they are defined now. Each row inserted checks each of
 * its keys with a query of its own (15 per order, most of the server's time in a load); adding
 * the key back checks the whole table with one join. SQLite's are off for the load instead
 * (withSqliteLoadSettings), and part of its tables' definitions.
 */
async function foreignKeys(db: Db, tables: readonly string[]): Promise<Deferred[]> {
  if (dialectOf(db) !== 'postgres') return [];
  const { rows } = await sql<{ table: string; name: string; definition: string }>`select
      quote_ident(n.nspname) || '.' || quote_ident(c.relname) as table, quote_ident(k.conname) as name, pg_get_constraintdef(k.oid) as definition
    from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = current_schema() and c.relname in (${sql.join(tables)})
    order by c.relname, k.conname`.execute(db);
  return rows.map((r) => ({
    drop: `alter table ${r.table} drop constraint ${r.name}`,
    create: `alter table ${r.table} add constraint ${r.name} ${r.definition}`,
  }));
}

/**
 * Runs `load` with the tables' secondary indexes (and on PostgreSQL their foreign keys) dropped,
 * and makes them again afterwards as they were defined: building an index from a whole table sorts
 * once, where loading into it inserts every row at its place, and the load slowed as they grew.
 * Call it in a transaction holding the whole load: DDL is transactional on both backends, so a
 * load that fails or dies rolls back with the indexes in place. Only for tables that hold nothing
 * else of worth: while it runs, their readers have no indexes.
 */
export async function withIndexesDeferred<T>(trx: Db, tables: readonly string[], load: () => Promise<T>): Promise<T> {
  const deferred = [...(await secondaryIndexes(trx, tables)), ...(await foreignKeys(trx, tables))];
  for (const { drop } of deferred) await sql.raw(drop).execute(trx);
  return withSmallSqliteCache(trx, async () => {
    const result = await load();
    for (const { create } of deferred) await sql.raw(create).execute(trx);
    return result;
  });
}

/**
 * SQLite: a 16 MB page cache while the indexes are deferred. What is left to maintain during the
 * load (keys that grow at their end) needs little, and CREATE INDEX sorts in runs of the cache's
 * size: a larger cache, or sorting on a second thread (`pragma threads`), made the indexes no
 * faster and cost memory (docs/performance.md).
 */
async function withSmallSqliteCache<T>(trx: Db, work: () => Promise<T>): Promise<T> {
  if (dialectOf(trx) !== 'sqlite') return work();
  const saved = Object.values((await sql.raw('pragma cache_size').execute(trx)).rows[0] as object)[0] as number;
  await sql`pragma cache_size = -16384`.execute(trx);
  try {
    return await work();
  } finally {
    await sql.raw(`pragma cache_size = ${Number(saved)}`).execute(trx);
  }
}

/**
 * SQLite settings for a bulk load, each restored afterwards:
 * - a 64 MB page cache: in the default 2 MB the growing indexes spill out and are written again and
 *   again; the load writes near their ends, which 64 MB holds, and more was no faster and took
 *   much of the 300 MB the demo may use;
 * - foreign keys off: three primary-key lookups per order item, for rows consistent by construction
 *   (the test runs `pragma foreign_key_check`);
 * - a rollback journal instead of WAL when no other connection has the file open (else it stays
 *   WAL, slower but the same): WAL writes every page twice, while a load mostly adds new pages, which
 *   a rollback journal does not copy. With synchronous=FULL: on NORMAL a power cut can corrupt it.
 */
async function withSqliteLoadSettings<T>(db: Kysely<Database>, load: (switched: boolean) => Promise<T>): Promise<T> {
  const read = async (name: string) =>
    Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0] as string | number;
  const saved = { cache_size: await read('cache_size'), synchronous: await read('synchronous') };
  await sql`pragma cache_size = -65536`.execute(db);
  await sql`pragma foreign_keys = off`.execute(db);
  let switched = false;
  if ((await read('journal_mode')) === 'wal') {
    // Another connection makes the switch fail with SQLITE_BUSY: at once, not after the busy timeout.
    const busyTimeout = await read('busy_timeout');
    await sql`pragma busy_timeout = 0`.execute(db);
    switched = await sql`pragma journal_mode = truncate`.execute(db).then(
      async () => (await read('journal_mode')) === 'truncate',
      () => false,
    );
    await sql.raw(`pragma busy_timeout = ${Number(busyTimeout)}`).execute(db);
  }
  if (switched) await sql`pragma synchronous = full`.execute(db);
  try {
    return await load(switched);
  } finally {
    if (switched) await sql`pragma journal_mode = wal`.execute(db);
    await sql.raw(`pragma synchronous = ${Number(saved.synchronous)}`).execute(db);
    await sql`pragma foreign_keys = on`.execute(db);
    await sql.raw(`pragma cache_size = ${Number(saved.cache_size)}`).execute(db);
  }
}

/**
 * PostgreSQL: freshly bulk-loaded tables have no planner statistics and no visibility map yet, so
 * plans are guesses and index-only scans still visit the table (list queries were far slower
 * until autovacuum caught up). What an operator runs after a bulk load; outside any transaction.
 */
async function vacuumAnalyze(db: Kysely<Database>, tables: readonly string[]): Promise<void> {
  for (const table of tables) await sql`vacuum (analyze) ${sql.table(table)}`.execute(db);
}
