import { sql, type Kysely } from 'kysely';
import { newId } from '../lib/ids.ts';
import type { Database } from './types.ts';

/**
 * The server instances running on a database: each registers with its release, heartbeats, and
 * leaves when it stops. The migrator asks whether an earlier release is running (src/db/migrate.ts).
 */

export const HEARTBEAT_MS = 10_000;
/** A crash leaves its row behind: unseen this long means stopped. */
export const GONE_AFTER_MS = 3 * HEARTBEAT_MS;

export interface Registration {
  readonly id: string;
  heartbeat(): Promise<void>;
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
