import { Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import { QueuedSqliteDialect } from './sqlite-dialect.ts';
import { openSqliteDatabase } from './sqlite-driver.ts';
import type { Database } from './types.ts';

/**
 * A read-only view of the database as it was at one moment, for as long as a long read (an
 * export) takes, on a connection of its own: the writes of the rest of the service go on meanwhile
 * and are not seen. Release it when done; a snapshot pins old row versions until then.
 */
export interface Snapshot {
  db: Kysely<Database>;
  release(): Promise<void>;
}

export type OpenSnapshot = () => Promise<Snapshot>;

/**
 * SQLite: a second, read-only connection to the file in a read transaction. In WAL mode its first
 * read fixes what it sees, and it never blocks the writer. (An in-memory database has no second
 * connection; it shares the main one, without isolation.)
 */
export function sqliteSnapshots(file: string, main: Kysely<Database>): OpenSnapshot {
  return async () => {
    if (file === ':memory:') return { db: main, release: async () => {} };
    const reader = openSqliteDatabase(file, { readonly: true });
    reader.pragma('busy_timeout = 5000');
    const db = new Kysely<Database>({ dialect: new QueuedSqliteDialect(reader) });
    try {
      await sql`begin`.execute(db);
      // The snapshot starts at the first read, so make it now, before the caller's first query.
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

/**
 * PostgreSQL: one connection from the pool in a `repeatable read, read only` transaction, whose
 * snapshot is taken at its first statement (made here), as a Kysely instance of its own.
 */
export function postgresSnapshots(pool: pg.Pool): OpenSnapshot {
  return async () => {
    const client = await pool.connect();
    try {
      await client.query('begin isolation level repeatable read read only');
      await client.query('select 1');
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    // Kysely asks its "pool" for a connection per query; this one always lends the same client.
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
