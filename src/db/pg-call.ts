import pg from 'pg';
import { sql } from 'kysely';
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
 * PostgreSQL: calls the function `name` (one of the migrations') with `args` and commits, in one
 * round trip: the arguments are written into the text, so that it goes by the simple protocol,
 * which takes two statements at once. What the function locks is then held until its commit with
 * no wait for this process between them (under load, a wait of milliseconds for the event loop to
 * read the answer and send COMMIT). Kysely's own COMMIT after it is not sent (pg-prepared.ts).
 * It must be the transaction's last statement.
 */
export async function callAndCommit(db: Db, name: string, args: unknown[]): Promise<void> {
  if (!/^[a-z_]+$/.test(name)) throw new Error('callAndCommit takes a function name of ours');
  await sql.raw(`select ${name}(${args.map(pgLiteral).join(', ')}); commit`).execute(db);
}
