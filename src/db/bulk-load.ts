import { sql, type Kysely } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Database, Db } from './types.ts';

/** What a bulk load may do on this connection, besides inserting. */
export interface BulkLoad {
  /** Whether one transaction may hold the whole load: on SQLite only in a rollback journal, as a WAL would grow unchecked. */
  oneTransaction: boolean;
}

/** Runs a bulk load with SQLite's load settings, or on PostgreSQL a `vacuum (analyze)` afterwards. */
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

interface Deferred {
  drop: string;
  create: string;
}

/** The tables' non-unique indexes, with their DDL; unique ones stay to check the load's rows. */
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
 * PostgreSQL: the tables' foreign keys. Each inserted row checks each key with its own query;
 * adding the key back checks the table with one join. SQLite's are off for the load instead.
 */
async function foreignKeys(db: Db, tables: readonly string[]): Promise<Deferred[]> {
  if (dialectOf(db) !== 'postgres') return [];
  const { rows } = await sql<{ table: string; name: string; definition: string }>`select
      quote_ident(n.nspname) || '.' || quote_ident(c.relname) as table, quote_ident(k.conname) as name,
      pg_get_constraintdef(k.oid) as definition
    from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = current_schema() and c.relname in (${sql.join(tables)})
    order by c.relname, k.conname`.execute(db);
  return rows.map((r) => ({
    drop: `alter table ${r.table} drop constraint ${r.name}`,
    create: `alter table ${r.table} add constraint ${r.name} ${r.definition}`,
  }));
}

/**
 * Runs `load` with secondary indexes (and PostgreSQL foreign keys) dropped, then rebuilds them:
 * one sort beats inserting each row in place. Call inside the load's transaction so a failed load
 * rolls back with the indexes in place, and only for tables whose readers can do without them.
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

/** SQLite: a small page cache while indexes are deferred; a larger one made them no faster (docs/performance.md). */
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
 * SQLite load settings, each restored afterwards: a larger page cache so the growing indexes stay
 * in memory; foreign keys off (rows are consistent by construction, and the test checks them);
 * and, when no other connection has the file open, a rollback journal, which does not copy new
 * pages as WAL does, with synchronous=FULL, since on NORMAL a power cut can corrupt it.
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

/** PostgreSQL: freshly loaded tables have no statistics or visibility map until this runs; outside a transaction. */
async function vacuumAnalyze(db: Kysely<Database>, tables: readonly string[]): Promise<void> {
  for (const table of tables) await sql`vacuum (analyze) ${sql.table(table)}`.execute(db);
}
