import { CompiledQuery, SqliteDialect, type DatabaseConnection, type Driver } from 'kysely';
import { CachingConnection, Lease, type LeaseOwner, type Member } from './sqlite-connection.ts';
import type { SqliteDatabase } from './sqlite-driver.ts';

/** At most this many writes share one SQLite transaction, which bounds the first one's wait. */
const MAX_GROUP = 16;

const run = (connection: CachingConnection, text: string) => connection.executeQuery(CompiledQuery.raw(text));

/**
 * SQLite's one connection, handed over first come, first served. Group commit: each write is a
 * savepoint of one SQLite transaction the next waiters join, ended by one COMMIT; a write's commit
 * resolves once the group is durable, a failed write rolls back its own savepoint, and a statement
 * outside a write commits the group first, so nothing outside sees an undurable write.
 */
class QueuedSqliteDriver implements Driver, LeaseOwner {
  readonly #connection: CachingConnection;
  readonly #database: SqliteDatabase;
  readonly #waiting: Array<() => void> = [];
  #held = false;
  /** The open SQLite transaction's members, when one is open. */
  #group: Member[] | null = null;
  /** How many acquirers joined the open transaction. */
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
    // Commit the open group first: never read a write that could still fail, nor join it.
    if (this.#group) this.#commitGroup();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if ((connection as Lease).handedOver) return;
    try {
      if (this.#group && !this.#mayGoOn()) this.#commitGroup();
    } finally {
      this.#handOver();
    }
  }

  #mayGoOn(): boolean {
    return this.#waiting.length > 0 && this.#joined < MAX_GROUP - 1;
  }

  #handOver(): void {
    const next = this.#waiting.shift();
    if (this.#group) this.#joined++;
    if (next) next();
    else this.#held = false;
  }

  /*
   * `immediate` takes the write lock at begin, where SQLite waits out busy_timeout; a deferred
   * transaction asking at its first write gets SQLITE_BUSY at once while another connection writes.
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
    // The group goes on; this write's answer waits for the group's commit.
    const committed = new Promise<void>((resolve, reject) => {
      member.settle = { resolve, reject };
    });
    lease.handedOver = true;
    this.#handOver();
    return committed;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const member = (connection as Lease).member;
    // Ended: the group's commit failed and rolled it back already.
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
      // Its failure may rest on the group's earlier writes: answer once they are durable.
      const failed = this.#group.length > 0 ? this.#commitGroup() : null;
      if (failed) throw failed;
    } else {
      // SQLite rolled the whole transaction back (I/O error, full disk): every member goes with it.
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
