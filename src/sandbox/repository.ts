import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';

export interface Sandbox {
  id: string;
  name: string;
  liveBusinessId: string;
  createdAt: string;
}

export async function listSandboxes(db: Db, liveBusinessId: string): Promise<Sandbox[]> {
  const rows = await db
    .selectFrom('businesses')
    .select(['id', 'name', 'live_business_id', 'created_at'])
    .where('live_business_id', '=', liveBusinessId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    liveBusinessId: r.live_business_id!,
    createdAt: toIso(r.created_at)!,
  }));
}

/** A business with whether it is a sandbox, and whose. */
export async function findBusinessKind(db: Db, businessId: string) {
  return db
    .selectFrom('businesses')
    .select(['id', 'name', 'live_business_id'])
    .where('id', '=', businessId)
    .executeTakeFirst();
}

export async function insertSandboxBusiness(db: Db, sandbox: Omit<Sandbox, 'createdAt'>, now: string): Promise<void> {
  await db
    .insertInto('businesses')
    .values({
      id: sandbox.id,
      name: sandbox.name,
      live_business_id: sandbox.liveBusinessId,
      created_at: now,
      updated_at: now,
    })
    .execute();
}
