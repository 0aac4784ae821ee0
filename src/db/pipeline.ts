import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
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

/** Statements sent by `sendRead`, each with where it hands its answer. */
const readLater = new WeakMap<CompiledQuery, (answer: Promise<QueryResult<unknown>>) => void>();

/**
 * A statement whose answer the write reads, but later: on PostgreSQL, in a transaction, it is sent
 * and the write goes on, so that the statements after it travel behind it in the same round trip;
 * `answer` is its answer. As with a write sent ahead, its failure also fails the transaction's next
 * statement waited for. Anywhere else it runs as any statement, and `answer` is its result.
 */
export async function sendRead<R>(db: Db, query: Runnable): Promise<{ answer: Promise<QueryResult<R>> }> {
  const compiled = compiledOf(db, query);
  let answer: Promise<QueryResult<R>> | undefined;
  readLater.set(compiled, (sent) => {
    answer = sent as Promise<QueryResult<R>>;
  });
  try {
    const result = await db.executeQuery<R>(compiled);
    return { answer: answer ?? Promise.resolve(result) };
  } finally {
    readLater.delete(compiled);
  }
}

/** Waits for the writes sent ahead in this transaction; throws the first one's error if one failed. */
export async function sentWritesDone(db: Db): Promise<void> {
  // SQLite has answered every statement already.
  if (dialectOf(db) === 'postgres') await db.executeQuery(FLUSH);
}

/** A failure among writes sent ahead, as `sentWritesOutcome` tells it. */
export interface SentWriteFailure {
  error: unknown;
}

/** Marker statements of `sentWritesOutcome`, each with where it hands its outcome. */
const outcomes = new WeakMap<CompiledQuery, (outcome: Promise<SentWriteFailure | undefined>) => void>();

/**
 * What becomes of the writes sent ahead so far in this transaction, without waiting for them: the
 * first one's failure, or undefined when all succeeded (at once on SQLite and outside a transaction).
 * Wrapped, as an async function cannot answer a promise. A write group tells by it whether a
 * member's failure was its own or the one before's (src/write/groups.ts).
 */
export async function sentWritesOutcome(db: Db): Promise<{ outcome: Promise<SentWriteFailure | undefined> }> {
  let outcome: Promise<SentWriteFailure | undefined> = Promise.resolve(undefined);
  if (dialectOf(db) === 'postgres') {
    const marker = CompiledQuery.raw('-- sent writes outcome');
    outcomes.set(marker, (watched) => {
      outcome = watched;
    });
    await db.executeQuery(marker);
  }
  return { outcome };
}

async function firstFailure(answers: Array<Promise<unknown>>): Promise<SentWriteFailure | undefined> {
  for (const answer of answers) {
    try {
      await answer;
    } catch (error) {
      return { error };
    }
  }
  return undefined;
}

const EMPTY: QueryResult<never> = { rows: [] };

/**
 * A connection of the pool as Kysely's transactions use it, with the writes sent ahead: their
 * answers, in the order sent, each already on its way (node-postgres writes a pipelining client's
 * query to the socket as it is asked, and answers in order).
 */
class PipeliningConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection;
  /** In a transaction begun by the driver: only there may an answer be checked later. */
  open = false;
  #ahead: Array<Promise<QueryResult<unknown>>> = [];

  constructor(inner: DatabaseConnection) {
    this.inner = inner;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query === FLUSH) {
      await this.#settle();
      return EMPTY;
    }
    const watch = outcomes.get(query);
    if (watch) {
      watch(firstFailure([...this.#ahead]));
      return EMPTY;
    }
    const answer = this.inner.executeQuery<R>(query);
    const read = readLater.get(query);
    if (this.open && (read || unread.has(query))) {
      // Handled in #settle; until then a failure is not unhandled.
      answer.catch(() => {});
      this.#ahead.push(answer);
      read?.(answer);
      return EMPTY;
    }
    if (this.#ahead.length === 0) return answer;
    answer.catch(() => {});
    await this.#settle();
    return answer;
  }

  /** The answers sent ahead; the first failure among them is the transaction's (those after it only say it was aborted). */
  async #settle(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = [];
    for (const answer of ahead) await answer;
  }

  /** Ends the transaction: COMMIT fails with the first failure sent ahead; ROLLBACK forgets them (the reason, or moot). */
  async end(statement: 'commit' | 'rollback'): Promise<void> {
    this.open = false;
    if (statement === 'rollback') {
      const ahead = this.#ahead;
      this.#ahead = [];
      await Promise.allSettled(ahead);
      await this.inner.executeQuery(CompiledQuery.raw('rollback'));
      return;
    }
    const answer = this.inner.executeQuery(CompiledQuery.raw('commit'));
    answer.catch(() => {});
    await this.#settle();
    await answer;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/**
 * Kysely's PostgreSQL driver with a pipelining pool (decision 0053): BEGIN and the writes marked
 * with `sendWrite` are sent without waiting for their answers, which are checked before the next
 * statement waited for, so a write's statements take fewer round trips. Everything else is the
 * driver's own.
 */
export class PipeliningDriver implements Driver {
  readonly #inner: Driver;
  readonly #connections = new WeakMap<DatabaseConnection, PipeliningConnection>();

  constructor(inner: Driver) {
    this.#inner = inner;
  }

  init(): Promise<void> {
    return this.#inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await this.#inner.acquireConnection();
    let connection = this.#connections.get(inner);
    if (!connection) {
      connection = new PipeliningConnection(inner);
      this.#connections.set(inner, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const pipelining = connection as PipeliningConnection;
    if (settings.isolationLevel || settings.accessMode) {
      await this.#inner.beginTransaction(pipelining.inner, settings);
      pipelining.open = true;
      return;
    }
    // BEGIN travels with the transaction's first statement, which reports BEGIN's failure if it had one.
    pipelining.open = true;
    await pipelining.executeQuery(BEGIN_WRITE);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PipeliningConnection).end('commit');
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PipeliningConnection).end('rollback');
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.savepoint!(connection, name, compile);
  }

  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.#inner.rollbackToSavepoint!(connection, name, compile);
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.#inner.releaseSavepoint!(connection, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.#inner.releaseConnection((connection as PipeliningConnection).inner);
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

/**
 * A write's BEGIN, and its named statements planned once per connection rather than at each run
 * (decision 0067): one simple query, so one message and one answer. Only transactions begun here
 * (the writes; a read's snapshot sets its isolation level) plan this way; the setting ends with
 * the transaction, so a pooler's next client never sees it.
 */
const BEGIN_WRITE = CompiledQuery.raw('begin; set local plan_cache_mode = force_generic_plan');
unread.add(BEGIN_WRITE);
