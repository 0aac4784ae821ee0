import pg from 'pg';
import { sql, type CompiledQuery } from 'kysely';
import type { Db } from './types.ts';

/** A value written into PostgreSQL SQL text: text (escaped by node-postgres), numbers, null, Buffers as bytea, arrays of these. */
function pgLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (Buffer.isBuffer(value)) return `decode('${value.toString('hex')}', 'hex')`;
  if (Array.isArray(value)) return `array[${value.map(pgLiteral).join(',')}]`;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  throw new Error(`no SQL literal for ${typeof value}`);
}

/**
 * A compiled statement as text with its parameters written in. Only for statements the query
 * builder made from our own code: their text holds no literals, so every `$n` is a placeholder.
 */
export function inlineParameters(query: CompiledQuery): string {
  if (query.sql.includes("'") || query.sql.includes(';')) throw new Error('inlineParameters takes builder-made statements without literals');
  return query.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index >= query.parameters.length) throw new Error(`no parameter $${n}`);
    return pgLiteral(query.parameters[index]);
  });
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
  const statements = [...before.map(inlineParameters), `select ${name}(${args.map(pgLiteral).join(', ')})`, 'commit'];
  await sql.raw(statements.join('; ')).execute(db);
}
