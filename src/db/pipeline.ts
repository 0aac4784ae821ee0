import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type pg from 'pg';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';
import { compiledOf, type Runnable } from './statement.ts';

/** Statements whose answer their caller does not read: see `sendWrite`. */
const unread = new WeakSet<CompiledQuery>();
/** Waits for what was sent ahead, and sends nothing itself (`sentWritesDone`). */
const FLUSH = CompiledQuery.raw('-- sent writes done');

/**
 * A write whose answer its caller does not need (a count, a derived row, the events): on
 * PostgreSQL, in a transaction, it is sent and the write goes on without waiting for it, so the
 * statements that follow travel behind it in the same round trip (node-postgres `pipeline: true`).
 * Its answer is checked before the transaction's next statement that is waited for, or its COMMIT:
 * if it failed, that statement fails with its error, and the transaction is rolled back. Anywhere
 * else (SQLite, outside a transaction) it runs as any statement. Decision 0053.
 */
export async function sendWrite(db: Db, query: Runnable): Promise<void> {
  const compiled = compiledOf(db, query);
  unread.add(compiled);
  await db.executeQuery(compiled);
}

/** Waits for the writes sent ahead in this transaction; throws the first one's error if one failed. */
export async function sentWritesDone(db: Db): Promise<void> {
  // SQLite has answered every statement already.
  if (dialectOf(db) === 'postgres') await db.executeQuery(FLUSH);
}

const EMPTY: QueryResult<never> = { rows: [] };
const ignore = () => {};

/** Where the service's PostgreSQL clients come from (src/db/pg-prepared.ts). */
export interface ClientPool {
  connect(): Promise<pg.PoolClient>;
  end(): Promise<void>;
}

/**
 * One pooled client as Kysely uses it. node-postgres, pipelining, writes each query to the socket as
 * it is asked, and answers them in order: in a transaction, the answers of the statements sent
 * ahead wait in `#ahead`, and are checked before the next statement's.
 */
class PipeliningConnection implements DatabaseConnection {
  readonly #client: pg.PoolClient;
  /** In a transaction begun by the driver: only there may an answer be checked later. */
  open = false;
  #ahead: Array<Promise<unknown>> = [];

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  release(): void {
    this.open = false;
    this.#client.release();
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query === FLUSH) {
      await this.#settle();
      return EMPTY;
    }
    const answer = this.#query<R>(query);
    if (this.open && unread.has(query)) {
      answer.catch(ignore); // handled in #settle
      this.#ahead.push(answer);
      return EMPTY;
    }
    if (this.#ahead.length === 0) return answer;
    answer.catch(ignore); // #settle may throw first
    await this.#settle();
    return answer;
  }

  async #query<R>(query: CompiledQuery): Promise<QueryResult<R> & { command: string }> {
    const { command, rowCount, rows } = await this.#client.query(query.sql, [...query.parameters]);
    const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return { command, numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined, rows: (rows ?? []) as R[] };
  }

  /** The answers sent ahead; the first failure among them is the transaction's (those after it only say it was aborted). */
  async #settle(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = [];
    for (const answer of ahead) await answer;
  }

  /** Ends the transaction. COMMIT checks what was sent ahead; ROLLBACK forgets it (its failure is the reason, or moot). */
  async end(statement: 'commit' | 'rollback'): Promise<void> {
    this.open = false;
    if (statement === 'rollback') {
      const ahead = this.#ahead;
      this.#ahead = [];
      await Promise.allSettled(ahead);
    }
    const answer = (await this.executeQuery(CompiledQuery.raw(statement))) as { command?: string };
    // PostgreSQL answers the COMMIT of a transaction a failed statement aborted with ROLLBACK, not an
    // error: a caller that caught that statement's error and went on must not take it for success.
    if (statement === 'commit' && answer.command === 'ROLLBACK') {
      throw new Error('The transaction was rolled back: one of its statements failed');
    }
  }

  streamQuery(): AsyncIterableIterator<never> {
    throw new Error('streaming is not used on PostgreSQL');
  }
}

/**
 * Kysely's PostgreSQL driver for a pool of pipelining node-postgres clients (decision 0053): BEGIN
 * and the writes marked with `sendWrite` are sent without waiting for their answers, which are
 * checked before the next statement waited for, so a write's statements take fewer round trips.
 */
export class PipeliningDriver implements Driver {
  readonly #pool: ClientPool;
  readonly #connections = new WeakMap<pg.PoolClient, PipeliningConnection>();

  constructor(pool: ClientPool) {
    this.#pool = pool;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.#pool.connect();
    let connection = this.#connections.get(client);
    if (!connection) {
      connection = new PipeliningConnection(client);
      this.#connections.set(client, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const pipelining = connection as PipeliningConnection;
    if (settings.isolationLevel || settings.accessMode) {
      const mode = [
        settings.isolationLevel && `isolation level ${settings.isolationLevel}`,
        settings.accessMode,
      ].filter(Boolean);
      await pipelining.executeQuery(CompiledQuery.raw(`start transaction ${mode.join(' ')}`));
      pipelining.open = true;
      return;
    }
    // BEGIN travels with the transaction's first statement, which reports BEGIN's failure if it had one.
    pipelining.open = true;
    await pipelining.executeQuery(unreadQuery('begin'));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PipeliningConnection).end('commit');
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PipeliningConnection).end('rollback');
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PipeliningConnection).release();
  }

  destroy(): Promise<void> {
    return this.#pool.end();
  }
}

function unreadQuery(text: string): CompiledQuery {
  const query = CompiledQuery.raw(text);
  unread.add(query);
  return query;
}
