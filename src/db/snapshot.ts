import { Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import { QueuedSqliteDialect } from './sqlite-dialect.ts';
import { openSqliteDatabase } from './sqlite-driver.ts';
import type { Database } from './types.ts';

/**
 * A read-only view of the database at one moment, on its own connection, for a long read (an
 * export). Release it when done: a snapshot pins old row versions.
 */
export interface Snapshot {
  db: Kysely<Database>;
  release(): Promise<void>;
}

export type OpenSnapshot = () => Promise<Snapshot>;

/** SQLite: a read-only connection in a read transaction (WAL: fixed at its first read). `:memory:` shares the main one, unisolated. */
export function sqliteSnapshots(file: string, main: Kysely<Database>): OpenSnapshot {
  return async () => {
    if (file === ':memory:') return { db: main, release: async () => {} };
    const reader = openSqliteDatabase(file, { readonly: true });
    reader.pragma('busy_timeout = 5000');
    const db = new Kysely<Database>({ dialect: new QueuedSqliteDialect(reader) });
    try {
      await sql`begin`.execute(db);
      // The snapshot starts at the first read: take it now.
      await sql`select 1 from sqlite_master limit 1`.execute(db);
    } catch (error) {
      await db.destroy();
      throw error;
    }
    return {
      db,
      release: async () => {
        await sql`commit`.execute(db).catch(() => {});
        await db.destroy();
      },
    };
  };
}

/** PostgreSQL: one pooled client in a `repeatable read, read only` transaction. */
export function postgresSnapshots(pool: Pick<pg.Pool, 'connect'>): OpenSnapshot {
  return async () => {
    const client = await pool.connect();
    try {
      await client.query('begin isolation level repeatable read read only');
      await client.query('select 1');
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    // Kysely asks its "pool" per query; this one always lends the same client.
    const lender = {
      connect: async () => ({ query: client.query.bind(client), release: () => {} }),
      end: async () => {},
    };
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: lender as unknown as pg.Pool }) });
    return {
      db,
      release: async () => {
        let failure: Error | undefined;
        await client.query('commit').catch((error: Error) => {
          failure = error;
        });
        client.release(failure);
        await db.destroy();
      },
    };
  };
}
