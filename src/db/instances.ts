import { sql, type Kysely } from 'kysely';
import { newId } from '../lib/ids.ts';
import type { Database } from './types.ts';

/**
 * The server instances running on a database (migration 0031): each registers with its release
 * (the newest migration it knows), says it is alive every HEARTBEAT_MS, and leaves when it stops.
 * The migrator asks it whether an instance of an earlier release is running (src/db/migrate.ts).
 */

export const HEARTBEAT_MS = 10_000;
/** An instance not seen for this long has stopped (a crash leaves its row behind). */
export const GONE_AFTER_MS = 3 * HEARTBEAT_MS;

export interface Registration {
  readonly id: string;
  /** Says the instance is alive (a job every HEARTBEAT_MS). */
  heartbeat(): Promise<void>;
  /** Removes the instance, as it stops. */
  leave(): Promise<void>;
}

export async function registerInstance(
  db: Kysely<Database>,
  release: string,
  clock: () => number = Date.now,
): Promise<Registration> {
  const id = newId('ins');
  const now = () => new Date(clock()).toISOString();
  await db.insertInto('instances').values({ id, release, started_at: now(), seen_at: now() }).execute();
  return {
    id,
    heartbeat: async () => {
      // Written again if an operator's cleanup removed it.
      const updated = await db.updateTable('instances').set({ seen_at: now() }).where('id', '=', id).executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0)
        await db.insertInto('instances').values({ id, release, started_at: now(), seen_at: now() }).execute();
    },
    leave: async () => {
      await db.deleteFrom('instances').where('id', '=', id).execute();
    },
  };
}

/** Instances seen lately that run a release earlier than `release`: their release and how many. */
export async function earlierInstances(
  db: Kysely<any>,
  release: string,
  now: number,
): Promise<Array<{ release: string; n: number }>> {
  const since = new Date(now - GONE_AFTER_MS).toISOString();
  const rows = await sql<{ release: string; n: number | string }>`select release, count(*) as n from instances
    where release < ${release} and seen_at > ${since} group by release order by release`.execute(db);
  return rows.rows.map((r) => ({ release: r.release, n: Number(r.n) }));
}
