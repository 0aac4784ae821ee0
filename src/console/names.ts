import type { Db } from '../db/types.ts';
import { anyOf } from '../db/dialect.ts';

/** The names pages show for ids: a business's buyers by partnership, items by id, keys and users by id. */

export async function buyerNamesOf(db: Db, businessId: string, partnershipIds: string[]): Promise<Map<string, string>> {
  const ids = [...new Set(partnershipIds)];
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('partnerships')
    .innerJoin('phantoms', (join) =>
      join
        .onRef('phantoms.id', '=', 'partnerships.phantom_id')
        .onRef('phantoms.business_id', '=', 'partnerships.business_id'),
    )
    .select(['partnerships.id', 'phantoms.name'])
    .where('partnerships.business_id', '=', businessId)
    .where(anyOf(db, 'partnerships.id', ids))
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function itemNamesOf(db: Db, businessId: string, itemIds: string[]): Promise<Map<string, string>> {
  const ids = [...new Set(itemIds)];
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('items')
    .select(['id', 'name'])
    .where('business_id', '=', businessId)
    .where(anyOf(db, 'id', ids))
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Every key's and user's name in the business, for actors recorded without one. */
export async function actorNamesOf(db: Db, businessId: string): Promise<Map<string, string>> {
  const [keys, users] = await Promise.all([
    db.selectFrom('api_keys').select(['id', 'name']).where('business_id', '=', businessId).execute(),
    db.selectFrom('users').select(['id', 'name']).where('business_id', '=', businessId).execute(),
  ]);
  return new Map([
    ...keys.filter((k) => k.name).map((k) => [k.id, k.name!] as const),
    ...users.map((u) => [u.id, u.name] as const),
  ]);
}
