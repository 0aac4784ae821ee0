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

/**
 * PostgreSQL: runs `before` (statements whose answer nobody needs, src/db/deferred.ts), calls the
 * function `name` (one of the migrations') with `args` and commits, in one round trip: the
 * arguments are written into the text, so that it goes by the simple protocol, which takes several
 * statements at once (in the open transaction; the first that fails ends the message, and the
 * transaction is rolled back). What they lock is then held until the commit with no wait for this
 * process between them (under load, a wait of milliseconds for the event loop to read each answer
 * and send the next). Kysely's own COMMIT after it is not sent (pg-prepared.ts). It must be the
 * transaction's last statement.
 */
export async function callAndCommit(db: Db, name: string, args: unknown[], before: CompiledQuery[] = []): Promise<void> {
  if (!/^[a-z_]+$/.test(name)) throw new Error('callAndCommit takes a function name of ours');
  const written = literals(args);
  if (written === undefined) throw new Error(`callAndCommit cannot write out an argument of ${name}`);
  const statements = [...before.map(inlineParameters), `select ${name}(${written.join(', ')})`, 'commit'];
  await sql.raw(statements.join('; ')).execute(db);
}
