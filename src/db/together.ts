import { CompiledQuery, type Compilable, type RawBuilder } from 'kysely';
import { dialectOf } from './dialect.ts';
import { TOGETHER } from './pg-prepared.ts';
import type { Db } from './types.ts';

/** A statement to run: a query builder, raw SQL, or a query already compiled (src/db/statement.ts). */
export type Runnable = Compilable | RawBuilder<unknown> | CompiledQuery;

/** The statement compiled, once. */
export const compiledOf = (db: Db, q: Runnable): CompiledQuery =>
  !('compile' in q) ? q : 'isRawBuilder' in q ? q.compile(db) : q.compile();

/**
 * Runs statements that need no answer from one another, in the order given, and returns each
 * one's rows. On PostgreSQL they go in one message, one round trip instead of one each (the pool
 * of pg-prepared.ts writes them out; a statement it cannot write out sends them one by one); a
 * statement that fails ends the message, and the error is the same as if it ran alone. SQLite
 * runs them one after another, in process.
 */
export async function runTogether(db: Db, queries: Runnable[]): Promise<unknown[][]> {
  const compiled = queries.map((q) => compiledOf(db, q));
  if (dialectOf(db) === 'postgres') {
    const { rows } = await db.executeQuery(CompiledQuery.raw(TOGETHER, compiled));
    return rows as unknown[][];
  }
  const results: unknown[][] = [];
  for (const query of compiled) results.push((await db.executeQuery(query)).rows as unknown[]);
  return results;
}
