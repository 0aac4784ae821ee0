import { CompiledQuery, SqliteDialect, type DatabaseConnection, type Driver } from 'kysely';
import { CachingConnection, Lease, type LeaseOwner, type Member } from './sqlite-connection.ts';
import type { SqliteDatabase } from './sqlite-driver.ts';

/**
 * Write transactions that follow one another commit together: at most this many share one SQLite
 * transaction (and so one commit), which bounds how long the first of them waits for its answer.
 */
const MAX_GROUP = 16;

const run = (connection: CachingConnection, text: string) => connection.executeQuery(CompiledQuery.raw(text));

/**
 * SQLite has one connection. Kysely's driver guards it with a lock that wakes every waiter at
 * once, so under many concurrent requests some lost the race again and again and waited far
 * longer than the rest; this driver hands the connection over first come, first served.
 *
 * Group commit: a write transaction is a savepoint of a SQLite transaction that the next waiting
 * acquirers join, up to MAX_GROUP, and one COMMIT ends them all, so the pages the writes touch go
 * to the WAL once per group, not once per write. Each write's commit resolves only then, so nothing
 * is answered before it is durable; a write that fails rolls back its own savepoint only; members
 * read earlier members' writes and commit with them or not at all; and a statement outside a write
 * transaction commits the group before it runs, so nothing outside sees a write before it is durable.
 */
class QueuedSqliteDriver implements Driver, LeaseOwner {
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
    if (this.#group && !this.#database.inTransaction)
      this.#failGroup(new Error('the database rolled back the transaction'));
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
    const committed = new Promise<void>((resolve, reject) => {
      member.settle = { resolve, reject };
    });
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
