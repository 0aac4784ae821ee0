import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely } from 'kysely';
import { PoolerSafePostgresDialect } from './migration-lock.ts';
import pg from 'pg';
import { preparingPool } from './pg-prepared.ts';
import { postgresSnapshots, sqliteSnapshots, type OpenSnapshot } from './snapshot.ts';
import { startCheckpointer, type Checkpointer, type CheckpointerOptions } from './sqlite-checkpointer.ts';
import { ReadReplicas } from './replicas/index.ts';
import { QueuedSqliteDialect } from './sqlite-dialect.ts';
import { openSqliteDatabase } from './sqlite-driver.ts';
import type { Database, Dialect } from './types.ts';
import { serviceTypes } from './pg-types.ts';
import type { PoolStats } from '../http/metrics.ts';
import { maskUrl } from '../lib/urls.ts';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** For messages and logs: the URL without its password. */
  describe: string;
  close(): Promise<void>;
  /** PostgreSQL pool use, for /metrics; absent on SQLite. */
  poolStats?: () => PoolStats;
  /** A read-only snapshot on a connection of its own, for long reads (exports). */
  openSnapshot: OpenSnapshot;
  /** SQLite with `backgroundCheckpoints`: the thread that checkpoints the WAL. */
  checkpointer?: Checkpointer;
  /** PostgreSQL with `replicaUrls`: reads routed to its replicas (src/db/replicas). */
  replicas?: ReadReplicas;
}

const snapshots = new WeakMap<Kysely<Database>, OpenSnapshot>();

/** The snapshots of a database opened by createDatabase (the app is given the Kysely object only). */
export function snapshotsOf(db: Kysely<Database>): OpenSnapshot {
  const open = snapshots.get(db);
  if (!open) throw new Error('not a database opened by createDatabase');
  return open;
}

export interface DatabaseOptions {
  /** PostgreSQL only: the schema every connection uses (tests give each run its own). */
  schema?: string;
  poolSize?: number;
  /** PostgreSQL only: name statements so that each connection parses and plans them once (default on). */
  prepare?: boolean;
  /** SQLite file only: checkpoint the WAL on a thread of its own (sqlite-checkpointer.ts); the server's choice. */
  backgroundCheckpoints?: boolean | CheckpointerOptions;
  /** PostgreSQL only: streaming replicas of it that reads may use (DATABASE_REPLICA_URLS). */
  replicaUrls?: readonly string[];
}

function openSqlite(path: string, options: DatabaseOptions): { db: Kysely<Database>; checkpointer?: Checkpointer } {
  const file = resolve(path);
  if (path !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = openSqliteDatabase(path === ':memory:' ? path : file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // A WAL that grew under load is cut back to this size once it starts again from its beginning.
  sqlite.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  const checkpointer =
    options.backgroundCheckpoints && path !== ':memory:'
      ? startCheckpointer(sqlite, file, options.backgroundCheckpoints === true ? {} : options.backgroundCheckpoints)
      : undefined;
  return {
    db: new Kysely<Database>({ dialect: new QueuedSqliteDialect(sqlite, () => checkpointer?.afterCommit()) }),
    checkpointer,
  };
}

function openPostgres(
  url: string,
  options: DatabaseOptions,
): {
  db: Kysely<Database>;
  pool: pg.Pool;
  connect: () => Promise<pg.PoolClient>;
  roundTrips: () => number;
  statements: () => number;
} {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error('invalid schema name');
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    // A query is written to the socket as it is asked: what a write sends ahead travels together (src/db/pipeline.ts).
    pipeline: true,
    types: serviceTypes,
    options: options.schema ? `-c search_path=${options.schema}` : undefined,
  });
  // A client losing its server must not take the process down: the pool listens on idle clients,
  // and this listener covers a client that is checked out between two queries (a transaction, or
  // a request between its statements). The query in progress, or the next one, reports the loss,
  // and the pool drops the broken client when it is released.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const prepared = preparingPool(pool, { naming: options.prepare !== false });
  const dialect = new PoolerSafePostgresDialect({ pool: prepared, pipeline: true });
  return {
    db: new Kysely<Database>({ dialect }),
    pool,
    connect: () => prepared.connect(),
    roundTrips: prepared.roundTrips,
    statements: prepared.statements,
  };
}

/** One Kysely object from DATABASE_URL: `sqlite:PATH` or `postgres://...`. */
export function createDatabase(url: string, options: DatabaseOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const { db, checkpointer } = openSqlite(path, options);
    const openSnapshot = sqliteSnapshots(path === ':memory:' ? path : resolve(path), db);
    snapshots.set(db, openSnapshot);
    const close = async () => {
      await checkpointer?.close();
      await db.destroy();
    };
    return { db, dialect: 'sqlite', describe: `sqlite:${path}`, close, openSnapshot, checkpointer };
  }
  const { db, pool, connect, roundTrips, statements } = openPostgres(url, options);
  const openSnapshot = postgresSnapshots(pool);
  snapshots.set(db, openSnapshot);
  const replicas = options.replicaUrls?.length
    ? new ReadReplicas(url, { connect, openSnapshot }, options.replicaUrls, {
        schema: options.schema,
        poolSize: options.poolSize,
        prepare: options.prepare,
      })
    : undefined;
  if (replicas) snapshots.set(replicas.db, replicas.openSnapshot);
  return {
    db,
    dialect: 'postgres',
    describe: maskUrl(url),
    close: async () => {
      await replicas?.close();
      await db.destroy();
    },
    openSnapshot,
    replicas,
    poolStats: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: pool.options.max,
      roundTrips: roundTrips(),
      statements: statements(),
    }),
  };
}
