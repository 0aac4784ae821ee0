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

/** `for update` on PostgreSQL, serialising a row's read-modify-write across instances; SQLite has one writer already. */
export function forUpdate<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate() : query;
}

/** As `forUpdate`, but skips rows another transaction holds (shared work queues). */
export function forUpdateSkipLocked<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(db) === 'postgres' ? query.forUpdate().skipLocked() : query;
}

/** `forUpdateSkipLocked` as a raw SQL clause. */
export function skipLockedClause(db: Db, alias: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`for update of ${sql.ref(alias)} skip locked` : sql``;
}

/**
 * `column in (values)`. On PostgreSQL one array parameter, so the statement's text (and its
 * prepared name) is the same for any number of values.
 */
export function anyOf(db: Db, column: string, values: string[]): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${values}::text[])`
    : sql<SqlBool>`${ref} in (${sql.join(values)})`;
}

/** `anyOf` for a statement built once (src/db/statement.ts), with `list` from `listOf(db, values)`. */
export function inList(db: Db, column: string, list: string[] | Record<string, string>): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  // By the backend, not by the list: what `build` gets is a stand-in.
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${list}::text[])`
    : sql<SqlBool>`${ref} in (${sql.join(Object.values(list))})`;
}

export const listOf = (db: Db, values: string[]): string[] | Record<string, string> =>
  dialectOf(db) === 'postgres' ? values : Object.fromEntries(values.map((value, i) => [i, value]));

export function anyOfNumbers(db: Db, column: string, values: number[]): RawBuilder<SqlBool> {
  const ref = sql.ref(column);
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`${ref} = any(${values}::bigint[])`
    : sql<SqlBool>`${ref} in (${sql.join(values)})`;
}

/** A column the planner must not pick an index by: SQLite takes unary `+` as that hint. */
export function notIndexed(db: Db, column: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`${sql.ref(column)}` : sql`+${sql.ref(column)}`;
}

/**
 * Whether testing a JSON path per row beats probing another table's index per row: yes for
 * PostgreSQL's pre-parsed jsonb, no for SQLite's text JSON and cheap probes.
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

/**
 * Whether a write that runs holds up every request of this process (SQLite's one connection, its
 * synchronous driver) rather than only its business's other writes (PostgreSQL's write lock).
 */
export function writesHoldEveryRequest(db: Db): boolean {
  return dialectOf(db) === 'sqlite';
}

export function utcDay(db: Db, column: Expression<unknown>): RawBuilder<string> {
  return dialectOf(db) === 'postgres'
    ? sql<string>`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD')`
    : sql<string>`substr(${column}, 1, 10)`;
}

const COUNT_SHARDS = 16;

/**
 * The row of a sharded count this transaction adds to. On PostgreSQL writers of one business
 * would queue on one row's lock until commit; spread over rows they rarely meet, and readers sum.
 */
export function countShard(db: Db): number {
  return dialectOf(db) === 'postgres' ? Math.floor(Math.random() * COUNT_SHARDS) : 0;
}

export function greatest(db: Db, a: Expression<unknown>, b: Expression<unknown>): RawBuilder<number> {
  return dialectOf(db) === 'postgres' ? sql<number>`greatest(${a}, ${b})` : sql<number>`max(${a}, ${b})`;
}

export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

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

/** A table's statistics are stale once it has grown by this share of the rows they counted (autovacuum's own). */
const STALE_SHARE = 0.1;

/**
 * PostgreSQL's `ANALYZE`, now rather than at autovacuum's next look, of the tables of `grown` (the
 * rows each grew since it was last analysed here) whose statistics are stale: never counted, or
 * counting fewer than ten times the rows grown since. A table already large keeps its statistics,
 * and the time an `ANALYZE` of it takes. The tables analysed, in `grown`'s order; SQLite: none.
 */
export async function analyzeGrownTables(db: Db, grown: ReadonlyMap<string, number>): Promise<string[]> {
  if (dialectOf(db) !== 'postgres' || grown.size === 0) return [];
  const { rows } = await sql<{ name: string; counted: number | null }>`
    select t.name, c.reltuples as counted
    from unnest(${[...grown.keys()]}::text[]) with ordinality as t(name, n)
    left join pg_class c on c.oid = to_regclass(t.name)
    order by t.n`.execute(db);
  const stale = rows
    .filter(({ name, counted }) => counted === null || counted < 0 || grown.get(name)! >= STALE_SHARE * counted)
    .map(({ name }) => name);
  if (stale.length > 0) await sql`analyze ${sql.join(stale.map((t) => sql.table(t)))}`.execute(db);
  return stale;
}

/** PostgreSQL: notifies `channel` listeners (src/db/listen.ts) at commit, not on rollback. */
export async function notifyAtCommit(db: Db, channel: string, payload: string): Promise<void> {
  if (dialectOf(db) === 'postgres') await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}

/**
 * Runs `read` against one snapshot, so the largest `updatedAt` on a page stands for every write
 * before it. PostgreSQL: a repeatable-read, read-only transaction; SQLite: one connection held.
 */
export function readAtOneMoment<T>(db: Kysely<Database>, read: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  if (dialectOf(db) === 'postgres')
    return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(read);
  return db.connection().execute(read);
}
