import {
  CompiledQuery, SelectQueryNode, SqliteDialect, type DatabaseConnection, type Driver, type QueryResult,
} from 'kysely';
import type { SqliteDatabase, SqliteStatement as Statement } from './sqlite-driver.ts';

/** Distinct statements kept prepared; far more than the application's queries, so eviction is rare. */
const STATEMENT_CACHE_SIZE = 1000;

/**
 * The one SQLite connection (better-sqlite3, chosen in sqlite-driver.ts), with its prepared
 * statements cached by SQL text. Kysely's own driver prepares every query afresh, which cost a
 * fifth of the server's CPU on a get-order load; the application issues a few hundred distinct
 * statements, so a bounded cache holds them all.
 */
class CachingConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #statements = new Map<string, Statement>();

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement) {
      // Most recently used last, so the first key is the one to evict.
      this.#statements.delete(sql);
    } else {
      statement = this.#db.prepare(sql);
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.delete(this.#statements.keys().next().value!);
    }
    this.#statements.set(sql, statement);
    return statement;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.#prepare(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return Promise.resolve({ rows: statement.all(parameters) as R[] });
    const { changes, lastInsertRowid } = statement.run(parameters);
    return Promise.resolve({ numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] });
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('SQLite streams select queries only');
    // Not cached: a statement that is being iterated cannot run anything else meanwhile.
    for (const row of this.#db.prepare(compiledQuery.sql).iterate(compiledQuery.parameters as unknown[])) {
      yield { rows: [row as R] };
    }
  }
}

/**
 * SQLite has one connection. Kysely's driver guards it with a lock that wakes every waiter at
 * once, so under many concurrent requests some lost the race again and again (30 s tails); this
 * driver hands the connection over first come, first served.
 */
class QueuedSqliteDriver implements Driver {
  readonly #connection: CachingConnection;
  readonly #database: SqliteDatabase;
  readonly #waiting: Array<() => void> = [];
  #held = false;

  readonly #afterCommit: () => void;

  constructor(database: SqliteDatabase, afterCommit: () => void) {
    this.#database = database;
    this.#connection = new CachingConnection(database);
    this.#afterCommit = afterCommit;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#held = true;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.#waiting.shift();
    // Hand the connection straight to the longest waiter; it stays held in between.
    if (next) next();
    else this.#held = false;
  }

  /*
   * `immediate`: a transaction takes the write lock when it begins, where SQLite waits for another
   * writer (busy_timeout). A deferred one that read first and asked for the lock at its first write
   * got SQLITE_BUSY at once while another connection held it (the CLI beside a server, or the
   * background checkpointer for an instant), since waiting there could deadlock.
   */
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
    this.#afterCommit();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    this.#database.close();
  }
}

export class QueuedSqliteDialect extends SqliteDialect {
  readonly #database: SqliteDatabase;
  readonly #afterCommit: () => void;

  /** `afterCommit` runs between two transactions (the background checkpointer's finishing pass). */
  constructor(database: SqliteDatabase, afterCommit: () => void = () => {}) {
    super({ database });
    this.#database = database;
    this.#afterCommit = afterCommit;
  }

  override createDriver(): Driver {
    return new QueuedSqliteDriver(this.#database, this.#afterCommit);
  }
}
