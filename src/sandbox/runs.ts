/**
 * Simulation runs (migration 0044): one simulated buyer at work in a sandbox, its schedule, counts and
 * the second thoughts to come, driven by whichever single instance holds its lease.
 */
import { sql, type UpdateObject } from 'kysely';
import type { Database, Db } from '../db/types.ts';
import { whereLive } from '../db/live.ts';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { Actor } from '../write/runner.ts';

export type RunState = 'RUNNING' | 'STOPPED' | 'FINISHED' | 'FAILED';

/** A change or cancellation the buyer makes of an order once `at` orders of the run are made. */
export interface SecondThought {
  orderId: string;
  at: number;
  kind: 'changed' | 'cancelled';
}

export interface SimulationCounts {
  created: number;
  changed: number;
  cancelled: number;
  received: number;
}

export interface SimulationRun {
  id: string;
  sandboxId: string;
  state: RunState;
  ordersPerMinute: number;
  intervalMs: number;
  /** Orders to make; null: until stopped. */
  total: number | null;
  counts: SimulationCounts;
  nextAt: string;
  pending: SecondThought[];
  startedBy: Actor;
  error: string | null;
  createdAt: string;
  endedAt: string | null;
}

/** How many of the sandbox's runs are running. */
export async function countRunning(db: Db, sandboxId: string): Promise<number> {
  const row = await db
    .selectFrom('simulation_runs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('business_id', '=', sandboxId)
    .where('state', '=', 'RUNNING')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The one instance driving a run, by its lease. */
export interface Held {
  id: string;
  owner: string;
}

type RunRow = Awaited<ReturnType<typeof selectRuns>>[number];

const selectRuns = (db: Db) => db.selectFrom('simulation_runs').selectAll().execute();

export function toRun(row: RunRow): SimulationRun {
  return {
    id: row.id,
    sandboxId: row.business_id,
    state: row.state as RunState,
    ordersPerMinute: Math.round((60_000 / row.interval_ms) * 100) / 100,
    intervalMs: row.interval_ms,
    total: row.total,
    counts: { created: row.created, changed: row.changed, cancelled: row.cancelled, received: row.received },
    nextAt: toIso(row.next_at)!,
    pending: readJson<SecondThought[]>(row.pending) ?? [],
    startedBy: readJson<Actor>(row.started_by)!,
    error: row.error,
    createdAt: toIso(row.created_at)!,
    endedAt: toIso(row.ended_at),
  };
}

export async function insertRun(
  db: Db,
  run: { id: string; businessId: string; intervalMs: number; total: number | null; startedBy: Actor; now: string },
  lease?: { owner: string; until: string },
): Promise<SimulationRun> {
  const row = await db
    .insertInto('simulation_runs')
    .values({
      id: run.id,
      business_id: run.businessId,
      state: 'RUNNING',
      interval_ms: run.intervalMs,
      total: run.total,
      created: 0,
      changed: 0,
      cancelled: 0,
      received: 0,
      next_at: run.now,
      pending: '[]',
      started_by: JSON.stringify(run.startedBy),
      error: null,
      lease_owner: lease?.owner ?? null,
      lease_until: lease?.until ?? null,
      created_at: run.now,
      ended_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRun(row);
}

export async function findRun(db: Db, businessId: string, id: string): Promise<SimulationRun | undefined> {
  const row = await db
    .selectFrom('simulation_runs')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && toRun(row);
}

/** The sandbox's latest runs, newest first. */
export async function listRuns(db: Db, businessId: string, limit = 10): Promise<SimulationRun[]> {
  const rows = await db
    .selectFrom('simulation_runs')
    .selectAll()
    .where('business_id', '=', businessId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toRun);
}

/**
 * Changes a run in the transaction of the write that did what the change records, only while `held`
 * holds it and it runs (and, with `created`, only if that many orders were made before): false when
 * it is not so, and the write must roll back. So each order, change and receipt happens exactly once.
 */
export async function updateRun(
  trx: Db,
  held: Held,
  set: UpdateObject<Database, 'simulation_runs'>,
  created?: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('simulation_runs')
    .set(set)
    .where('id', '=', held.id)
    .where('lease_owner', '=', held.owner)
    .where('state', '=', 'RUNNING')
    .$if(created !== undefined, (q) => q.where('created', '=', created!))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export const plusOne = (column: 'changed' | 'cancelled' | 'received') => sql<number>`${sql.ref(column)} + 1`;

/** Ends a running run of the business (STOPPED, or FAILED with why); false when it was not running. */
export async function endRun(db: Db, businessId: string, id: string, now: string, failed?: string): Promise<boolean> {
  const result = await db
    .updateTable('simulation_runs')
    .set({
      state: failed ? 'FAILED' : 'STOPPED',
      error: failed ?? null,
      ended_at: now,
      lease_owner: null,
      lease_until: null,
    })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where('state', '=', 'RUNNING')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Stops every run of the business (before a reset or delete empties it). */
export async function stopRuns(db: Db, businessId: string, now: string): Promise<void> {
  await db
    .updateTable('simulation_runs')
    .set({ state: 'STOPPED', ended_at: now, lease_owner: null, lease_until: null })
    .where('business_id', '=', businessId)
    .where('state', '=', 'RUNNING')
    .execute();
}

export async function insertRunOrder(db: Db, row: { businessId: string; runId: string; orderId: string; now: string }) {
  await db
    .insertInto('simulation_orders')
    .values({ business_id: row.businessId, run_id: row.runId, order_id: row.orderId, created_at: row.now })
    .execute();
}

/** How many of its latest orders a run waits for; older ones the buyer no longer checks. */
export const AWAITED = 1000;

/** Of the run's latest orders, the ones acknowledged and shipped in full (IN_TRANSIT by their shipments) that no one has received. */
export async function findArrivedRunOrders(db: Db, businessId: string, runId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('orders')
    .select('id')
    .where('business_id', '=', businessId)
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('simulation_orders')
        .select('order_id')
        .where('run_id', '=', runId)
        .orderBy('created_at', 'desc')
        .limit(AWAITED),
    )
    .where('acknowledgement_id', 'is not', null)
    .where('status', '=', 'IN_TRANSIT')
    .where('delivered_at', 'is', null)
    .where(whereLive())
    .execute();
  return rows.map((r) => r.id);
}
