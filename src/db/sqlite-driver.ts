import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteDatabase = BetterSqlite3.Database;
export type SqliteStatement = BetterSqlite3.Statement;

/**
 * Picks the SQLite driver for the running Node.js: better-sqlite3 13 (Node-API 10, prebuilt) where
 * Node has Node-API 10, since 12 can abort the process on newer Node; better-sqlite3 12, built
 * from source, on Node 20, where 13 does not load. Same API, so nothing else knows which runs.
 * Both are optional dependencies, so the one a Node cannot use does not fail `npm install`.
 */
const DRIVERS = {
  'better-sqlite3': 'better-sqlite3 13 (Node-API 10)',
  'better-sqlite3-12': 'better-sqlite3 12 (built from source)',
} as const;

type DriverPackage = keyof typeof DRIVERS;

let loaded: { name: DriverPackage; Database: typeof BetterSqlite3 } | undefined;

/** By capability, not by version number. */
export function chooseSqliteDriver(napiVersion = Number(process.versions.napi)): DriverPackage {
  return napiVersion >= 10 ? 'better-sqlite3' : 'better-sqlite3-12';
}

function loadDriver(): NonNullable<typeof loaded> {
  if (loaded) return loaded;
  const name = chooseSqliteDriver();
  try {
    // Loaded on first use: a PostgreSQL-only process needs no SQLite binary.
    const Database = createRequire(import.meta.url)(name) as typeof BetterSqlite3;
    loaded = { name, Database };
    return loaded;
  } catch (error) {
    throw new Error(
      `SQLite needs ${DRIVERS[name]} on Node ${process.version}, and it did not load (${(error as Error).message.split('\n')[0]}). ` +
        'Run `npm install` again with this Node.js, or use DATABASE_URL=postgres://...',
      { cause: error },
    );
  }
}

export function openSqliteDatabase(path: string, options: { readonly?: boolean } = {}): SqliteDatabase {
  const { Database } = loadDriver();
  return new Database(path, options);
}

/** The driver and SQLite version, for logs and benchmarks. */
export function describeSqliteDriver(): string {
  const { name } = loadDriver();
  const db = openSqliteDatabase(':memory:');
  try {
    const { version } = db.prepare('select sqlite_version() as version').get() as { version: string };
    return `${DRIVERS[name]}, SQLite ${version}, Node ${process.version}`;
  } finally {
    db.close();
  }
}
