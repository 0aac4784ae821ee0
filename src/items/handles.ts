import { anyOf } from '../db/dialect.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { ApiError, conflict } from '../lib/errors.ts';
import type { CreateItemInput } from './schema.ts';

/** Items' handles: derived from names, unique among a business's live items. */

/** Lower case, words joined by hyphens. */
export function handleFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 200);
  return slug || 'item';
}

/** Handles are unique among live items. */
export async function findItemIdByHandle(db: Db, businessId: string, handle: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('items')
    .select('id')
    .where('business_id', '=', businessId)
    .where('handle', '=', handle)
    .where(whereLive())
    .executeTakeFirst();
  return row?.id;
}

/**
 * The handles each input gets, in order: its own unless a live item or an earlier input has it (a
 * 409 for that input), else the name's slug, then "-2", "-3", and so on. Only handles looked up in
 * the database are given: one query when no slug is taken or wanted twice, and one more for each
 * window of numbered neighbours a slug steps into (slug-2 … slug-5, then 16 more, 64, then 256 at a time).
 * (A prefix scan would be no index range on PostgreSQL: it read every item of the business.)
 */
export async function chooseHandles(
  db: Db,
  businessId: string,
  inputs: CreateItemInput[],
): Promise<(string | ApiError)[]> {
  const bases = inputs.map(({ item }) => item.handle ?? handleFromName(item.name));
  const taken = new Set<string>();
  const checked = new Set<string>();
  const lookUp = async (handles: string[]) => {
    const fresh = [...new Set(handles)].filter((h) => !checked.has(h));
    for (const h of fresh) checked.add(h);
    for (const h of await liveHandles(db, businessId, fresh)) taken.add(h);
  };
  const choose = () => {
    const given = new Set(taken);
    return inputs.map(({ item }, i) => {
      let handle = bases[i];
      let n = 1;
      if (item.handle !== undefined) {
        if (given.has(handle)) return handleConflict(handle);
      } else {
        while (given.has(handle)) handle = `${bases[i]}-${++n}`;
      }
      given.add(handle);
      return { handle, n };
    });
  };
  await lookUp(bases);
  for (let size = 4; ; size = Math.min(size * 4, 256)) {
    const chosen = choose();
    const unchecked = chosen.flatMap((c, i) => (c instanceof ApiError || checked.has(c.handle) ? [] : [{ ...c, i }]));
    if (unchecked.length === 0) return chosen.map((c) => (c instanceof ApiError ? c : c.handle));
    await lookUp(unchecked.flatMap(({ n, i }) => Array.from({ length: size }, (_, k) => `${bases[i]}-${n + k}`)));
  }
}

/** The live handles of the business among `handles`. */
async function liveHandles(db: Db, businessId: string, handles: string[]): Promise<string[]> {
  if (handles.length === 0) return [];
  const rows = await db
    .selectFrom('items')
    .select('handle')
    .where('business_id', '=', businessId)
    .where(whereLive())
    .where(anyOf(db, 'handle', handles))
    .execute();
  return rows.map((r) => r.handle);
}

export const handleConflict = (handle: string) => conflict(`An item with handle '${handle}' already exists`);
