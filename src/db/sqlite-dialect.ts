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
 * Write transactions that follow one another commit together: at most this many share one SQLite
 * transaction (and so one commit), which bounds how long the first of them waits for its answer.
 */
const MAX_GROUP = 16;

/** One write transaction's part in a group: a savepoint of the shared SQLite transaction. */
type Member = { state: 'open' | 'released' | 'ended'; settle?: { resolve: () => void; reject: (error: Error) => void } };

/**
 * What each acquirer gets: the one connection, with the write transaction it runs, if any. Kysely
 * hands it back to the driver at begin, commit and rollback, which is how the driver tells members apart.
 */
class Lease implements DatabaseConnection {
  member: Member | null = null;
  /** Its write went on into the group, and the connection to the next waiter with it. */
  handedOver = false;
  constructor(readonly connection: CachingConnection, readonly driver: QueuedSqliteDriver) {}

  get inWrite(): boolean {
    return this.member?.state === 'open';
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    // Given away with its write (a transaction inside db.connection()): it waits for a turn again.
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

const run = (connection: CachingConnection, text: string) => connection.executeQuery(CompiledQuery.raw(text));

/**
 * SQLite has one connection. Kysely's driver guards it with a lock that wakes every waiter at
 * once, so under many concurrent requests some lost the race again and again (30 s tails); this
 * driver hands the connection over first come, first served.
 *
 * Group commit: a write transaction is a savepoint of a SQLite transaction that the next waiting
 * acquirer joins, up to MAX_GROUP, and one COMMIT ends them all; each write's commit resolves
 * only then, so nothing is answered before it is durable, and a write that fails rolls back its
 * own savepoint only. A commit wrote every page the writes touched to the WAL (the events' last
 * page, the counters, the orders' pages): once per group now, not once per write. A group's
 * members read the earlier members' writes, and commit with them or not at all; a statement
 * outside a write transaction (a read, a single-statement write) commits the group before it runs,
 * so nothing outside a group ever sees a write of it before it is durable.
 */
class QueuedSqliteDriver implements Driver {
  readonly #connection: CachingConnection;
  readonly #database: SqliteDatabase;
  readonly #waiting: Array<() => void> = [];
  #held = false;
  /** The open SQLite transaction's members, when one is open. */
  #group: Member[] | null = null;
  /** Acquirers that ran inside the open transaction: how many more may join it. */
  #joined = 0;

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
    return new Lease(this.#connection, this);
  }

  /** The lease gave the connection away with its write, and goes on using it: it queues again. */
  async reacquire(lease: Lease): Promise<void> {
    await this.acquireConnection();
    lease.handedOver = false;
  }

  beforeStatement(lease: Lease): void {
    if (lease.inWrite) {
      // SQLite ended the transaction on its own (an I/O error): a statement now would commit by itself.
      if (!this.#database.inTransaction) throw new Error('the database rolled back the transaction');
      return;
    }
    // A statement outside a write transaction commits the open group first: it never reads a write
    // that could still fail, nor becomes part of one.
    if (this.#group) this.#commitGroup();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if ((connection as Lease).handedOver) return;
    // An open group goes on with the next waiter while it may; otherwise it commits first.
    try {
      if (this.#group && !this.#mayGoOn()) this.#commitGroup();
    } finally {
      this.#handOver();
    }
  }

  #mayGoOn(): boolean {
    // The first write and MAX_GROUP - 1 that it was handed over to.
    return this.#waiting.length > 0 && this.#joined < MAX_GROUP - 1;
  }

  #handOver(): void {
    const next = this.#waiting.shift();
    if (this.#group) this.#joined++;
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
    const lease = connection as Lease;
    if (lease.handedOver) await this.reacquire(lease);
    // SQLite ended the transaction on its own (an I/O error): its members go with it.
    if (this.#group && !this.#database.inTransaction) this.#failGroup(new Error('the database rolled back the transaction'));
    if (!this.#group) {
      await run(this.#connection, 'begin immediate');
      this.#group = [];
      this.#joined = 0;
    }
    await run(this.#connection, 'savepoint member');
    lease.member = { state: 'open' };
    this.#group.push(lease.member);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    const member = lease.member!;
    await run(this.#connection, 'release member');
    member.state = 'released';
    if (!this.#mayGoOn()) {
      const failed = this.#commitGroup();
      if (failed) throw failed;
      return;
    }
    // The group goes on with the next waiter; this write's answer waits for the group's commit.
    const committed = new Promise<void>((resolve, reject) => { member.settle = { resolve, reject }; });
    lease.handedOver = true;
    this.#handOver();
    return committed;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const member = (connection as Lease).member;
    // Ended: its group's commit failed, and the group is rolled back already.
    if (!member || member.state === 'ended') return;
    if (this.#database.inTransaction) {
      try {
        await run(this.#connection, 'rollback to member');
        await run(this.#connection, 'release member');
      } catch (error) {
        // Its writes could not be undone alone: the group must not commit them.
        this.#rollBackGroup(error as Error);
        throw error;
      }
      member.state = 'ended';
      this.#group = this.#group!.filter((m) => m !== member);
      // Its failure may rest on what it read of the group's earlier writes: it is answered once
      // they are durable, and with the group's failure if they never will be.
      const failed = this.#group.length > 0 ? this.#commitGroup() : null;
      if (failed) throw failed;
    } else {
      // SQLite rolled the whole transaction back (an I/O error, a full disk): every member goes with it.
      this.#failGroup(new Error('the database rolled back the transaction'));
    }
  }

  /** Commits the open group; returns the error every member failed with, if the commit failed. */
  #commitGroup(): Error | null {
    const group = this.#group!;
    try {
      this.#connection.executeQuery(CompiledQuery.raw('commit'));
    } catch (error) {
      this.#rollBackGroup(error as Error);
      return error as Error;
    }
    this.#group = null;
    for (const member of group) {
      member.state = 'ended';
      member.settle?.resolve();
    }
    this.#afterCommit();
    return null;
  }

  #rollBackGroup(error: Error): void {
    try {
      if (this.#database.inTransaction) this.#connection.executeQuery(CompiledQuery.raw('rollback'));
    } finally {
      this.#failGroup(error);
    }
  }

  #failGroup(error: Error): void {
    const group = this.#group ?? [];
    this.#group = null;
    for (const member of group) {
      member.state = 'ended';
      member.settle?.reject(error);
    }
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
