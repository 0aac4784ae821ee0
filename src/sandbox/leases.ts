/** Which single instance drives each simulation run: its lease, taken, paused and given up. */
import { sql, type SqlBool } from 'kysely';
import type { Db } from '../db/types.ts';
import { type Held, type SimulationRun, toRun } from './runs.ts';

/** A running run whose lease has passed (or is this owner's own), now held by `owner`; else undefined. */
export async function claimRun(
  db: Db,
  owner: string,
  now: string,
  leaseUntil: string,
  skip: string[],
): Promise<SimulationRun | undefined> {
  // Free: no lease, a lease passed, or this owner's own (a run it let go of after a failed step).
  const free = sql<SqlBool>`(lease_until is null or lease_until < ${now} or lease_owner = ${owner})`;
  const candidate = await db
    .selectFrom('simulation_runs')
    .select('id')
    .where('state', '=', 'RUNNING')
    .where(free)
    .$if(skip.length > 0, (q) => q.where('id', 'not in', skip))
    .orderBy('next_at')
    .limit(1)
    .executeTakeFirst();
  if (!candidate) return undefined;
  const row = await db
    .updateTable('simulation_runs')
    .set({ lease_owner: owner, lease_until: leaseUntil })
    .where('id', '=', candidate.id)
    .where('state', '=', 'RUNNING')
    .where(free)
    .returningAll()
    .executeTakeFirst();
  return row && toRun(row);
}

/**
 * After a step failed for no reason of the client's: no instance, this one included, takes the run
 * again until `until` (its lease, renewed now), so a failure that lasts is tried once a lease, not
 * once a poll.
 */
export async function pauseRun(db: Db, held: Held, until: string): Promise<void> {
  await db
    .updateTable('simulation_runs')
    .set({ lease_owner: 'paused', lease_until: until })
    .where('id', '=', held.id)
    .where('lease_owner', '=', held.owner)
    .where('state', '=', 'RUNNING')
    .execute();
}

/** Gives up this owner's leases (at shutdown), so another instance may take its runs at once. */
export async function releaseRuns(db: Db, owner: string): Promise<void> {
  await db
    .updateTable('simulation_runs')
    .set({ lease_owner: null, lease_until: null })
    .where('lease_owner', '=', owner)
    .execute();
}
