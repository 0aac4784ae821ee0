import { sql, type CompiledQuery } from 'kysely';
import { literals, writtenOut } from './pg-literals.ts';
import type { Db } from './types.ts';

/**
 * A compiled statement as text with its parameters written in. Only for statements the query
 * builder made from our own code: every `$n` outside a quoted identifier is a placeholder.
 */
export function inlineParameters(query: CompiledQuery): string {
  const written = literals(query.parameters);
  const text = written && writtenOut(query.sql, written);
  if (text === undefined) throw new Error('inlineParameters takes builder-made statements without literals, with values it can write out');
  return text;
}

/** An argument of `callAndCommit` that is SQL of our own making, written as it is, not as a value. */
export class SqlText {
  constructor(readonly text: string) {}
}

/**
 * PostgreSQL: runs `before` (statements whose answer the write does not need until it has
 * committed, src/db/deferred.ts), calls the function `name` (one of the migrations') with `args`
 * and commits, in one round trip, and answers the rows of each of `before`. The arguments are
 * written into the text, so that it goes by the simple protocol, which takes several statements at
 * once (in the open transaction; the first that fails ends the message, and the transaction is
 * rolled back). What they lock is then held until the commit with no wait for this process between
 * them (under load, a wait of milliseconds for the event loop to read each answer and send the
 * next). Kysely's own COMMIT after it is not sent (pg-prepared.ts). It must be the transaction's
 * last statement.
 */
export async function callAndCommit(db: Db, name: string, args: unknown[], before: CompiledQuery[] = []): Promise<unknown[][]> {
  if (!/^[a-z_]+$/.test(name)) throw new Error('callAndCommit takes a function name of ours');
  const written = args.map((arg) => (arg instanceof SqlText ? arg.text : literals([arg])?.[0]));
  if (written.includes(undefined)) throw new Error(`callAndCommit cannot write out an argument of ${name}`);
  const statements = [...before.map(inlineParameters), `select ${name}(${written.join(', ')})`, 'commit'];
  const { rows } = await sql.raw(statements.join('; ')).execute(db);
  // Each statement's rows come from the pool of pg-prepared.ts, which every PostgreSQL connection goes through (connection.ts).
  if (rows.length !== statements.length || !rows.every(Array.isArray)) throw new Error('callAndCommit needs the pool of pg-prepared.ts');
  return (rows as unknown[][]).slice(0, before.length);
}
