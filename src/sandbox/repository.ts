import { sql } from 'kysely';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';

export interface Sandbox {
  id: string;
  name: string;
  liveBusinessId: string;
  createdAt: string;
  /** Why it takes no writes for now (being created, reset or deleted, or a copy interrupted); null: ready. */
  closed: string | null;
}

export async function listSandboxes(db: Db, liveBusinessId: string): Promise<Sandbox[]> {
  const rows = await db
    .selectFrom('businesses')
    .leftJoin('write_clocks', 'write_clocks.business_id', 'businesses.id')
    .select(['id', 'name', 'live_business_id', 'created_at', 'write_clocks.closed'])
    .where('live_business_id', '=', liveBusinessId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    liveBusinessId: r.live_business_id!,
    createdAt: toIso(r.created_at)!,
    closed: r.closed ?? null,
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

export async function insertSandboxBusiness(
  db: Db,
  sandbox: Omit<Sandbox, 'createdAt' | 'closed'>,
  now: string,
): Promise<void> {
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

/** A live buyer of the business with its partnership: the one named, or one at random. */
export async function findSimulationBuyer(db: Db, businessId: string, buyerId?: string) {
  return db
    .selectFrom('phantoms')
    .innerJoin('partnerships', (join) =>
      join
        .onRef('partnerships.phantom_id', '=', 'phantoms.id')
        .onRef('partnerships.business_id', '=', 'phantoms.business_id'),
    )
    .select(['phantoms.id as buyerId', 'partnerships.id', 'partnerships.item_list_id as itemListId'])
    .where('phantoms.business_id', '=', businessId)
    .where(whereLive('phantoms'))
    .where(whereLive('partnerships'))
    .$if(buyerId !== undefined, (q) => q.where('phantoms.id', '=', buyerId!))
    .orderBy(sql`random()`)
    .limit(1)
    .executeTakeFirst();
}

/** Up to `limit` live variants at random from a price list's entries (the default list's for null). */
export async function pickListVariants(db: Db, businessId: string, itemListId: string | null, limit: number) {
  const rows = await db
    .selectFrom('item_list_entries as e')
    .innerJoin('item_lists as l', 'l.id', 'e.item_list_id')
    .innerJoin('item_variants as v', 'v.id', 'e.item_variant_id')
    .innerJoin('items as i', 'i.id', 'v.item_id')
    .select('v.id')
    .where('e.business_id', '=', businessId)
    .where('l.business_id', '=', businessId)
    .$if(itemListId === null, (q) => q.where('l.is_default', '=', 1))
    .$if(itemListId !== null, (q) => q.where('l.id', '=', itemListId!))
    .where(whereLive('l'))
    .where(whereLive('v'))
    .where(whereLive('i'))
    .orderBy(sql`random()`)
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Sessions of the live business's users that show the sandbox show the live business again. */
export async function returnSessionsToLive(db: Db, sandboxId: string, liveBusinessId: string): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ business_id: liveBusinessId })
    .where('business_id', '=', sandboxId)
    .where('user_id', 'in', (eb) => eb.selectFrom('users').select('id').where('business_id', '=', liveBusinessId))
    .execute();
}
