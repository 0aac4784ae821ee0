import { Migrator, sql, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import { dialectOf } from './dialect.ts';
import { foundation } from './migrations/0001-foundation.ts';
import { buyersAndPricing } from './migrations/0002-buyers-pricing.ts';
import { orders } from './migrations/0003-orders.ts';
import { invoices } from './migrations/0004-invoices.ts';
import { orderListIndexes } from './migrations/0005-order-list-indexes.ts';
import { orderProperties } from './migrations/0005-order-properties.ts';
import { orderItemsIndex } from './migrations/0006-order-items-index.ts';
import { countShards } from './migrations/0007-count-shards.ts';
import { orderChangeCounts } from './migrations/0008-order-change-counts.ts';
import { events } from './migrations/0009-events.ts';
import { webhooks } from './migrations/0010-webhooks.ts';
import { console as consoleTables } from './migrations/0013-console.ts';
import { exportIndexes } from './migrations/0014-export-indexes.ts';
import { webhookDueIndex } from './migrations/0015-webhook-due-index.ts';
import { orderCreatedCounts } from './migrations/0016-order-created-counts.ts';
import { propertyCountsByStatus } from './migrations/0017-property-counts-by-status.ts';
import { orderPhaseStatusIndexes } from './migrations/0018-order-phase-status-indexes.ts';
import { deletedOrders } from './migrations/0019-deleted-orders.ts';
import { appendEventsFunction } from './migrations/0020-append-events.ts';
import { dropEventsOccurredIndex } from './migrations/0021-drop-events-occurred-index.ts';
import { propertyCountsByDay } from './migrations/0022-property-counts-by-day.ts';
import { changeCountsByCreatedDay } from './migrations/0023-change-counts-by-created-day.ts';
import { createdIndexesWithUpdated } from './migrations/0024-created-indexes-with-updated.ts';
import { countsWithoutRowid } from './migrations/0025-counts-without-rowid.ts';
import { commitValueFunctions } from './migrations/0026-commit-values.ts';
import { countsCoveringKeys } from './migrations/0027-counts-covering-keys.ts';
import { longPropertyValues } from './migrations/0028-long-property-values.ts';
import { writeClocks } from './migrations/0029-write-clocks.ts';
import { orderLinesRecordVariants } from './migrations/0030-order-lines-record-variants.ts';
import { instances } from './migrations/0031-instances.ts';
import { restrictedKeys } from './migrations/0033-restricted-keys.ts';
import { imports } from './migrations/0034-imports.ts';
import { importRefsByLine } from './migrations/0035-import-refs-by-line.ts';
import { eventsByType } from './migrations/0036-events-by-type.ts';
import { eventTraceParents } from './migrations/0037-event-trace-parents.ts';
import { fulfilment } from './migrations/0039-fulfilment.ts';
import { shipmentsChangedByCreated } from './migrations/0041-shipments-changed-by-created.ts';
import { sandboxes } from './migrations/0042-sandboxes.ts';
import { simulationRuns } from './migrations/0044-simulation-runs.ts';
import { shipmentCounts } from './migrations/0045-shipment-counts.ts';
import { keySuccessors } from './migrations/0046-key-successors.ts';
import { closedWriteClocks } from './migrations/0047-closed-write-clocks.ts';
import { apiKeyScopes } from './migrations/0032-api-key-scopes.ts';
import type { Database, Dialect } from './types.ts';
import { executedMigrations, hasTable, migratedByNewerRelease, takeBackRenamed } from './migration-history.ts';
import { earlierInstances } from './instances.ts';
import { type LockWait, takeMigrationLock, TransactionLockAdapter } from './migration-lock.ts';

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001-foundation': foundation(dialect),
    '0002-buyers-pricing': buyersAndPricing(dialect),
    '0003-orders': orders(dialect),
    '0004-invoices': invoices(dialect),
    '0005-order-list-indexes': orderListIndexes(dialect),
    '0005-order-properties': orderProperties(dialect),
    '0006-order-items-index': orderItemsIndex(dialect),
    '0007-count-shards': countShards(dialect),
    '0008-order-change-counts': orderChangeCounts(dialect),
    '0009-events': events(dialect),
    '0010-webhooks': webhooks(dialect),
    '0013-console': consoleTables(dialect),
    '0014-export-indexes': exportIndexes,
    '0015-webhook-due-index': webhookDueIndex,
    '0016-order-created-counts': orderCreatedCounts(dialect),
    '0017-property-counts-by-status': propertyCountsByStatus(dialect),
    '0018-order-phase-status-indexes': orderPhaseStatusIndexes(dialect),
    '0019-deleted-orders': deletedOrders(dialect),
    '0020-append-events': appendEventsFunction(dialect),
    '0021-drop-events-occurred-index': dropEventsOccurredIndex,
    '0022-property-counts-by-day': propertyCountsByDay(dialect),
    '0023-change-counts-by-created-day': changeCountsByCreatedDay(dialect),
    '0024-created-indexes-with-updated': createdIndexesWithUpdated,
    '0025-counts-without-rowid': countsWithoutRowid(dialect),
    '0026-commit-values': commitValueFunctions(dialect),
    '0027-counts-covering-keys': countsCoveringKeys(dialect),
    '0028-long-property-values': longPropertyValues,
    '0029-write-clocks': writeClocks,
    '0030-order-lines-record-variants': orderLinesRecordVariants(dialect),
    '0031-instances': instances(dialect),
    '0032-api-key-scopes': apiKeyScopes,
    '0033-restricted-keys': restrictedKeys(dialect),
    '0034-imports': imports(dialect),
    '0035-import-refs-by-line': importRefsByLine,
    '0036-events-by-type': eventsByType,
    '0037-event-trace-parents': eventTraceParents,
    '0039-fulfilment': fulfilment(dialect),
    '0041-shipments-changed-by-created': shipmentsChangedByCreated,
    '0042-sandboxes': sandboxes,
    '0044-simulation-runs': simulationRuns(dialect),
    '0045-shipment-counts': shipmentCounts(dialect),
    '0046-key-successors': keySuccessors,
    '0047-closed-write-clocks': closedWriteClocks,
  };
}

/** The names of the migrations this release runs, in order. */
export const migrationNames = (dialect: Dialect): string[] => Object.keys(migrations(dialect)).sort();

/** The migrations this release knows that the database has not recorded as applied (readiness, src/http/health.ts). */
export async function pendingMigrations(db: Kysely<any>): Promise<string[]> {
  const applied = new Set(
    (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((r) => r.name),
  );
  return migrationNames(dialectOf(db)).filter((name) => !applied.has(name));
}

/** This release, as instances register it (src/db/instances.ts): the newest migration it knows. */
export const RELEASE = migrationNames('sqlite').at(-1)!;

/**
 * Migrations that the release before them cannot run beside: its instances must stop before one
 * runs (docs/operations.md, "Upgrading"). Every other migration only adds what an earlier release
 * ignores, so instances can be replaced one at a time. 0029 gives every write a business clock the
 * earlier release does not take, and 0030 order-line columns it does not write; 0045 shipment
 * counts and shipped quantities that its shipment writes would not keep (a line could then over-ship).
 */
export const STOP_FIRST = new Set(['0029-write-clocks', '0030-order-lines-record-variants', '0045-shipment-counts']);

/**
 * Losing a start-up race on SQLite shows as a busy database, or as "already exists" when the
 * winner's tables appear under a read that began before its commit; on PostgreSQL, a deadlock
 * with another instance's writes. Either way, trying again finds the work done, or does it.
 */
function isStartupRace(error: unknown): boolean {
  const { code = '', message = '' } = (error ?? {}) as { code?: string; message?: string };
  return code.startsWith('SQLITE_BUSY') || code === '40P01' || /already exists|database is locked/.test(message);
}

/**
 * Brings the schema up to date. On PostgreSQL it runs in one transaction that first takes the
 * migration lock (src/db/migration-lock.ts), so instances starting together, through a pooler too,
 * run each migration once; on SQLite a writer that loses the race retries and finds nothing to do.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  dialect: Dialect,
  upTo?: string,
  lock: LockWait = {},
): Promise<string[]> {
  if (dialect === 'postgres' && !(db.getExecutor().adapter instanceof TransactionLockAdapter))
    throw new Error('migrateToLatest needs a PostgreSQL database opened by createDatabase');
  for (let attempt = 1; ; attempt++) {
    try {
      return dialect === 'sqlite' ? await migrate(db, dialect, upTo) : await migrateLocked(db, upTo, lock);
    } catch (error) {
      if (attempt >= 5 || !isStartupRace(error)) throw error;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

/** PostgreSQL: the migrations in one transaction on one connection, under the migration lock. */
function migrateLocked(db: Kysely<Database>, upTo: string | undefined, lock: LockWait): Promise<string[]> {
  return db.connection().execute(async (conn) => {
    // Read committed: each statement sees what the instance that held the lock before committed.
    await sql`begin isolation level read committed`.execute(conn);
    try {
      await takeMigrationLock(conn, lock);
      const applied = await migrate(conn, 'postgres', upTo);
      await sql`commit`.execute(conn);
      return applied;
    } catch (error) {
      await sql`rollback`.execute(conn).catch(() => {});
      throw error;
    }
  });
}

async function migrate(db: Kysely<Database>, dialect: Dialect, upTo: string | undefined): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one; name ours, so
  // that another schema in the same database (another deployment, a test run) is never mistaken for it.
  const migrationTableSchema =
    dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0].schema
      : undefined;
  const known = migrations(dialect);
  const executed = await executedMigrations(db, dialect, migrationTableSchema);
  // Rolled back: a newer release migrated the database, and this release runs on what it added.
  if (upTo === undefined && migratedByNewerRelease(executed, Object.keys(known))) return [];
  await takeBackRenamed(db, executed);
  await refuseBesideEarlierInstances(
    db,
    dialect,
    migrationTableSchema,
    Object.keys(known).filter((name) => !executed.includes(name) && (upTo === undefined || name <= upTo)),
  );
  const migrator = new Migrator({
    db,
    migrationTableSchema,
    provider: { getMigrations: async () => known },
    // On PostgreSQL the caller's transaction holds them all.
    disableTransactions: dialect === 'postgres',
  });
  // `upTo` stops after that migration: tests use it to write rows in an older schema.
  const result: MigrationResultSet =
    upTo === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(upTo);
  if (result.error) throw result.error;
  return (result.results ?? []).map((r) => r.migrationName);
}

/**
 * Refuses to run a STOP_FIRST migration while an instance of an earlier release is seen: it would
 * break that instance's writes. Instances of releases before 0031 do not register; the docs say
 * to stop them first.
 */
export async function refuseBesideEarlierInstances(
  db: Kysely<Database>,
  dialect: Dialect,
  schema: string | undefined,
  pending: string[],
  breaking: ReadonlySet<string> = STOP_FIRST,
): Promise<void> {
  const stopFirst = pending.filter((name) => breaking.has(name));
  if (stopFirst.length === 0 || !(await hasTable(db, dialect, schema, 'instances'))) return;
  const running = await earlierInstances(db, RELEASE, Date.now());
  if (running.length === 0) return;
  throw new Error(
    `Migration ${stopFirst.join(', ')} cannot run while instances of an earlier release use the database ` +
      `(${running.map((r) => `${r.n} of release ${r.release}`).join(', ')}). ` +
      'Stop them, then start this release (docs/operations.md, "Upgrading").',
  );
}
