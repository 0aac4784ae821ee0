import {
  PostgresAdapter,
  sql,
  type Expression,
  type Kysely,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
} from 'kysely';
import type { Database, Db, Dialect } from './types.ts';

/** The one place that asks which backend a query runs on. */
export function dialectOf(db: Db): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Locks the selected rows until the transaction ends (`for update`) on PostgreSQL, so that a
 * read-modify-write of one row is serialised across connections and instances. A no-op on
 * SQLite, where one connection runs one transaction at a time already.
 */
export function forUpdate<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate() : query;
}

/**
 * As `forUpdate`, but rows another transaction holds are skipped rather than waited for (work
 * queues shared by instances); SQLite has one writer, and nothing to skip.
 */
export function forUpdateSkipLocked<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate().skipLocked() : query;
}

/** The same as a clause for raw SQL: `for update of <alias> skip locked` on PostgreSQL, nothing on SQLite. */
export function skipLockedClause(db: Db, alias: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`for update of ${sql.ref(alias)} skip locked` : sql``;
}

/**
 * `column in (values)`. On PostgreSQL one array parameter (`= any($1::text[])`), so the statement's
 * text, and with it its prepared name (src/db/pg-prepared.ts), is the same for any number of
 * values: a page of 100 orders went over the 32 parameters that are named, and was parsed and
 * planned again on every request.
 */
export function anyOf(db: Db, column: string, values: string[]): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${values}::text[])`
    : sql<SqlBool>`${ref} in (${sql.join(values)})`;
}

/**
 * `column in (values)` for a statement built once (src/db/statement.ts), with `list` from
 * `listOf(db, values)`. On PostgreSQL one array parameter (`= any($1::text[])`, as `anyOf`), so
 * one shape for any number of values; on SQLite a record of the values, whose size is part of the
 * shape, and one parameter each.
 */
export function inList(db: Db, column: string, list: string[] | Record<string, string>): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  // By the backend, not by the list: what `build` gets is a stand-in.
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${list}::text[])`
    : sql<SqlBool>`${ref} in (${sql.join(Object.values(list))})`;
}

/** The values for `inList`. */
export const listOf = (db: Db, values: string[]): string[] | Record<string, string> =>
  dialectOf(db) === 'postgres' ? values : Object.fromEntries(values.map((value, i) => [i, value]));

/** `column in (values)` for whole numbers (`= any($1::bigint[])` on PostgreSQL). */
export function anyOfNumbers(db: Db, column: string, values: number[]): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${values}::bigint[])`
    : sql<SqlBool>`${ref} in (${sql.join(values)})`;
}

/**
 * Text that starts with `prefix` (whose last character is ASCII), case-sensitively. On SQLite a
 * range, which an index on the column answers (`like` is case-insensitive there and reads every
 * entry); on PostgreSQL `starts_with`, since under a linguistic collation a range is not a prefix.
 */
export function startsWith(db: Db, column: string, prefix: string): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql<SqlBool>`starts_with(${ref}, ${prefix})`;
  const last = prefix.charCodeAt(prefix.length - 1);
  if (!(last < 0x7f)) throw new Error('startsWith needs a prefix ending in an ASCII character');
  return sql<SqlBool>`(${ref} >= ${prefix} and ${ref} < ${prefix.slice(0, -1) + String.fromCharCode(last + 1)})`;
}

/**
 * A column that the condition it is in must not choose an index by: SQLite, which has no
 * statistics, takes the unary `+` as that hint (and would otherwise range over a whole index of
 * that column when a narrower one exists); PostgreSQL chooses by its statistics.
 */
export function notIndexed(db: Db, column: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`${sql.ref(column)}` : sql`+${sql.ref(column)}`;
}

/**
 * Whether a JSON path tested on each row a query passes costs less than a probe of another
 * table's index per row. PostgreSQL's jsonb is parsed once, at write, so reading rows for their
 * JSON beat probing the side table. SQLite's JSON is text, parsed at each test, and its probes are
 * cheap: there the JSON was the slower.
 */
export function jsonOnRowsBeatsProbes(db: Db): boolean {
  return dialectOf(db) === 'postgres';
}

/**
 * Whether each statement is a round trip to a server (PostgreSQL), rather than a call inside this
 * process (SQLite): where it is, statements run under a business's write lock are worth joining.
 */
export function statementsAreRoundTrips(db: Db): boolean {
  return dialectOf(db) === 'postgres';
}

/** The UTC day (`YYYY-MM-DD`) of a timestamp column, as text. */
export function utcDay(db: Db, column: Expression<unknown>): RawBuilder<string> {
  return dialectOf(db) === 'postgres'
    ? sql<string>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD')`
    : sql<string>`substr(${column}, 1, 10)`;
}

const COUNT_SHARDS = 16;

/**
 * The row of a maintained count that this transaction adds to. PostgreSQL holds a row's lock
 * from the update until commit, so every writer of one business adding to one row would queue
 * there (creates under load spent most of their time so); spread over 16 rows, they rarely meet,
 * and readers sum the rows. SQLite has one writer at a time anyway: one row.
 */
export function countShard(db: Db): number {
  return dialectOf(db) === 'postgres' ? Math.floor(Math.random() * COUNT_SHARDS) : 0;
}

/** The larger of two numbers: PostgreSQL's `greatest`, SQLite's two-argument `max`. */
export function greatest(db: Db, a: Expression<unknown>, b: Expression<unknown>): RawBuilder<number> {
  return dialectOf(db) === 'postgres' ? sql<number>`greatest(${a}, ${b})` : sql<number>`max(${a}, ${b})`;
}

/** Whether an error is a unique-constraint violation, on either backend. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Column types that differ between the backends, for migrations. */
export function columnTypes(dialect: Dialect) {
  const pg = dialect === 'postgres';
  return {
    json: pg ? 'jsonb' : 'text',
    numeric: pg ? 'numeric' : 'text',
    timestamp: pg ? 'timestamptz' : 'text',
    flag: pg ? 'boolean' : 'integer',
    bytes: pg ? 'bytea' : 'blob',
  } as const;
}

/**
 * Refreshes the planner's statistics of a table now, rather than at autovacuum's next look (once
 * a minute): PostgreSQL's `ANALYZE`. SQLite's planner does not need it.
 */
export async function analyzeTable(db: Db, table: string): Promise<void> {
  if (dialectOf(db) === 'postgres') await sql`analyze ${sql.table(table)}`.execute(db);
}

/**
 * PostgreSQL: tells every instance listening on `channel` (src/db/listen.ts), when the transaction
 * commits, and not at all when it rolls back. SQLite has no other instances to tell.
 */
export async function notifyAtCommit(db: Db, channel: string, payload: string): Promise<void> {
  if (dialectOf(db) === 'postgres') await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}

/**
 * Runs `read`, whose statements then all see the database as of one moment: a list read in several
 * statements shows no write that committed between them, so the largest `updatedAt` on a page
 * stands for every write before it. PostgreSQL: a repeatable-read, read-only transaction. SQLite:
 * its one connection held for the whole read, so that no write runs in between.
 */
export function readAtOneMoment<T>(db: Kysely<Database>, read: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  if (dialectOf(db) === 'postgres')
    return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(read);
  return db.connection().execute(read);
}
