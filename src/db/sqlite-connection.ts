import { type CompiledQuery, SelectQueryNode, type DatabaseConnection, type QueryResult } from 'kysely';
import type { SqliteDatabase, SqliteStatement as Statement } from './sqlite-driver.ts';

/** Far more than the application's distinct statements, so eviction is rare. */
const STATEMENT_CACHE_SIZE = 1000;

/**
 * The one SQLite connection, with its prepared statements cached by SQL text: Kysely's own driver
 * prepares every query afresh, a large share of the server's CPU (docs/performance.md).
 */
export class CachingConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #statements = new Map<string, Statement>();

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement) {
      // Most recently used last, so the first key is evicted.
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

/** One write transaction's savepoint in the shared SQLite transaction. */
export type Member = {
  state: 'open' | 'released' | 'ended';
  settle?: { resolve: () => void; reject: (error: Error) => void };
};

export interface LeaseOwner {
  /** The lease handed the connection on with its write and still uses it: queue again. */
  reacquire(lease: Lease): Promise<void>;
  beforeStatement(lease: Lease): void;
}

/** One acquirer's hold on the connection; Kysely passes it back at begin, commit and rollback, which tells members apart. */
export class Lease implements DatabaseConnection {
  member: Member | null = null;
  /** Its write went on into the group, and the connection to the next waiter. */
  handedOver = false;
  readonly connection: CachingConnection;
  readonly driver: LeaseOwner;
  constructor(connection: CachingConnection, driver: LeaseOwner) {
    this.connection = connection;
    this.driver = driver;
  }

  get inWrite(): boolean {
    return this.member?.state === 'open';
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.handedOver) return this.driver.reacquire(this).then(() => this.executeQuery(compiledQuery));
    this.driver.beforeStatement(this);
    return this.connection.executeQuery(compiledQuery);
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.handedOver) await this.driver.reacquire(this);
    this.driver.beforeStatement(this);
    yield* this.connection.streamQuery(compiledQuery);
  }
}
