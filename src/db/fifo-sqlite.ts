import { SqliteDialect, type DatabaseConnection, type Driver, type TransactionSettings } from 'kysely';

/**
 * Kysely's SQLite driver guards its one connection with a lock that wakes every waiter at once,
 * so under many concurrent requests some can lose the race again and again (seconds of tail
 * latency). This driver queues acquirers first come, first served in front of it.
 */
class FifoDriver implements Driver {
  readonly #inner: Driver;
  readonly #waiting: Array<() => void> = [];
  #held = false;

  constructor(inner: Driver) {
    this.#inner = inner;
    if (inner.savepoint) this.savepoint = inner.savepoint.bind(inner);
    if (inner.rollbackToSavepoint) this.rollbackToSavepoint = inner.rollbackToSavepoint.bind(inner);
    if (inner.releaseSavepoint) this.releaseSavepoint = inner.releaseSavepoint.bind(inner);
  }

  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  init(): Promise<void> {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#held = true;
    return this.#inner.acquireConnection();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.#inner.releaseConnection(connection);
    const next = this.#waiting.shift();
    // Hand the connection straight to the longest waiter; it stays held in between.
    if (next) next();
    else this.#held = false;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.rollbackTransaction(connection);
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

export class FifoSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    return new FifoDriver(super.createDriver());
  }
}
