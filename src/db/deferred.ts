import type { CompiledQuery, Compilable } from 'kysely';
import type { Db } from './types.ts';
import { compiledOf } from './together.ts';

/**
 * Statements a write sends with its commit: those whose answer it does not need (the maintained
 * counts and the property side tables of src/orders/projections). The write runner opens a list
 * for its transaction and sends the list last, before the events: on PostgreSQL in the same
 * message as the events and COMMIT (pg-call.ts), so the count rows, which every writer of a
 * business shares, are locked only while the database works through that message, never while a
 * reply waits for this process; and a write makes fewer round trips.
 *
 * What is deferred is not visible to the write's own later statements: only statements whose
 * tables the write does not read again go here.
 */
const open = new WeakMap<object, CompiledQuery[]>();

/** Starts collecting the deferred statements of a write's transaction. */
export function openDeferred(trx: Db): void {
  open.set(trx, []);
}

/** The transaction's deferred statements, in the order they were asked for; the list is closed. */
export function takeDeferred(trx: Db): CompiledQuery[] {
  const statements = open.get(trx) ?? [];
  open.delete(trx);
  return statements;
}

/**
 * Runs `query` at the end of the write (see above) when `db` is a write's transaction, otherwise
 * now: a rebuild, a migration or a test that calls a repository outside the write runner.
 */
export async function deferToCommit(db: Db, query: Compilable | CompiledQuery): Promise<void> {
  const compiled = compiledOf(db, query);
  const statements = open.get(db);
  if (statements) statements.push(compiled);
  else await db.executeQuery(compiled);
}

/** Runs deferred statements one after another (SQLite, and a write that has no events). */
export async function runDeferred(db: Db, statements: CompiledQuery[]): Promise<void> {
  for (const statement of statements) await db.executeQuery(statement);
}
