import { type Driver, type Kysely, PostgresAdapter, PostgresDialect, type PostgresDialectConfig, sql } from 'kysely';
import { PipeliningDriver } from './pipeline.ts';
import { toIso } from '../lib/time.ts';

/**
 * The PostgreSQL migration lock, taken inside the migrations' own transaction
 * (`pg_advisory_xact_lock`) so that it ends with that transaction on whichever server connection a
 * pooler gave it. A session-level lock, Kysely's own, stays on the server connection that took it
 * when its unlock lands on another one (docs/decisions/0052).
 */

/** Kysely's migration lock key: a release that still takes it at session level and this one exclude each other. */
export const MIGRATION_LOCK_KEY = '3853314791062309107';

/** Kysely's adapter without the migrator's session-level lock: migrateToLatest holds the transaction-level one. */
export class TransactionLockAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

/**
 * PostgreSQL as the service opens it: Kysely's dialect with TransactionLockAdapter, and with
 * `pipeline` (a pool of node-postgres clients with `pipeline: true`) the PipeliningDriver.
 */
export class PoolerSafePostgresDialect extends PostgresDialect {
  readonly #pipeline: boolean;

  constructor(config: PostgresDialectConfig & { pipeline?: boolean }) {
    super(config);
    this.#pipeline = config.pipeline === true;
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    return this.#pipeline ? new PipeliningDriver(driver) : driver;
  }

  override createAdapter(): TransactionLockAdapter {
    return new TransactionLockAdapter();
  }
}

export interface LockWait {
  /** How long to wait for the lock before giving up (MIGRATION_LOCK_WAIT_SECONDS). */
  waitMs?: number;
  /** After this long, `log` says who holds the lock. */
  reportAfterMs?: number;
  log?: (line: string) => void;
}

interface Holder {
  pid: number;
  state: string | null;
  application_name: string | null;
  client_addr: string | null;
  query_start: Date | string | null;
  query: string | null;
}

/** The sessions holding the migration lock in this database, from pg_locks and pg_stat_activity. */
export async function migrationLockHolders(db: Kysely<any>): Promise<Holder[]> {
  const { rows } = await sql<Holder>`
    select a.pid, a.state, a.application_name, a.client_addr::text as client_addr, a.query_start, left(a.query, 200) as query
      from pg_locks l join pg_stat_activity a on a.pid = l.pid
     where l.locktype = 'advisory' and l.granted and l.objsubid = 1
       and l.database = (select oid from pg_database where datname = current_database())
       and (l.classid::int8 << 32 | l.objid::int8) = ${MIGRATION_LOCK_KEY}::int8
       and l.pid <> pg_backend_pid()`.execute(db);
  return rows;
}

const describeHolder = (h: Holder) =>
  `pid ${h.pid} (${h.state ?? 'state unknown'}, application '${h.application_name ?? ''}'` +
  `${h.client_addr ? `, client ${h.client_addr}` : ''}` +
  `${h.query_start ? `, last query at ${toIso(h.query_start)}: ${h.query}` : ''})`;

const describeHolders = (holders: Holder[]) =>
  holders.length === 0 ? 'a session that has just let it go' : holders.map(describeHolder).join('; ');

/**
 * Takes the migration lock for the transaction `trx` is in, trying again every 200 ms: after
 * `reportAfterMs` the log names who holds it, and after `waitMs` this throws, saying how to clear
 * a lock left on an idle connection.
 */
export async function takeMigrationLock(
  trx: Kysely<any>,
  { waitMs = 60_000, reportAfterMs = 5000, log = console.error }: LockWait = {},
): Promise<void> {
  const started = Date.now();
  let reported = false;
  for (;;) {
    const { rows } = await sql<{
      got: boolean;
    }>`select pg_try_advisory_xact_lock(${MIGRATION_LOCK_KEY}::int8) as got`.execute(trx);
    if (rows[0].got) return;
    const waited = Date.now() - started;
    if (waited >= waitMs) {
      const holders = await migrationLockHolders(trx);
      const idle = holders.filter((h) => h.state === 'idle').map((h) => h.pid);
      throw new Error(
        `Gave up waiting for the migration lock after ${Math.round(waited / 1000)} s: it is held by ${describeHolders(holders)}.` +
          (idle.length > 0
            ? ` A lock held by an idle connection was left behind (a session-level lock through a pooler): ` +
              `end it with select pg_terminate_backend(${idle.join(', ')}) or restart the pooler.`
            : ' Wait for that migration to finish, or raise MIGRATION_LOCK_WAIT_SECONDS.') +
          ' (docs/operations.md, "Behind a pooler")',
      );
    }
    if (!reported && waited >= reportAfterMs) {
      reported = true;
      log(`Waiting for the migration lock, held by ${describeHolders(await migrationLockHolders(trx))}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
