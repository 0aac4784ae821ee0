import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteDatabase = BetterSqlite3.Database;
export type SqliteStatement = BetterSqlite3.Statement;

/**
 * The one place that picks the SQLite driver for the running Node.js. better-sqlite3 13 is
 * Node-API 10 with prebuilt binaries in its npm package; it is the only choice on Node 24.19 and
 * later, where better-sqlite3 12's `node::ObjectWrap` destructor aborts the process when a garbage
 * collection finalises a statement. Node 20 has no Node-API 10, and there better-sqlite3 13
 * segfaults on load, so it gets better-sqlite3 12, built from source at install. Both have the same
 * API and bundle a recent SQLite, so nothing else in the application knows which one it runs on.
 * Both are optional dependencies: npm skips 13 on Node 20 (its engines say >=22), and a failed
 * source build of 12 on a newer Node (which never loads it) does not fail `npm install`.
 */
const DRIVERS = {
  'better-sqlite3': 'better-sqlite3 13 (Node-API 10)',
  'better-sqlite3-12': 'better-sqlite3 12 (built from source)',
} as const;

type DriverPackage = keyof typeof DRIVERS;

let loaded: { name: DriverPackage; Database: typeof BetterSqlite3 } | undefined;

/** Node-API 10 first shipped in Node 22.14; the decision is by capability, not by version number. */
export function chooseSqliteDriver(napiVersion = Number(process.versions.napi)): DriverPackage {
  return napiVersion >= 10 ? 'better-sqlite3' : 'better-sqlite3-12';
}

function loadDriver(): NonNullable<typeof loaded> {
  if (loaded) return loaded;
  const name = chooseSqliteDriver();
  try {
    // Loaded on first use, so a PostgreSQL-only process never needs a SQLite binary.
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

/** Opens a SQLite file (or `:memory:`) with the driver this Node.js can run. */
export function openSqliteDatabase(path: string, options: { readonly?: boolean } = {}): SqliteDatabase {
  const { Database } = loadDriver();
  return new Database(path, options);
}

/** Which driver this process uses, and its SQLite version: for logs and benchmarks. */
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
