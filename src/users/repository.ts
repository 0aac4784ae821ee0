import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';

export async function findUserByEmail(db: Db, email: string) {
  return db.selectFrom('users').selectAll().where('email', '=', email.trim().toLowerCase()).executeTakeFirst();
}

export async function findUser(db: Db, businessId: string, id: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export type UserRow = NonNullable<Awaited<ReturnType<typeof findUser>>>;

/** A user as lists and events show it: never the password's hash. */
export const toUser = (row: UserRow) => ({
  id: row.id,
  email: row.email,
  name: row.name,
  role: row.role,
  status: row.status,
  createdAt: toIso(row.created_at),
  updatedAt: toIso(row.updated_at),
});

export async function listUsers(db: Db, businessId: string) {
  const rows = await db
    .selectFrom('users')
    .selectAll()
    .where('business_id', '=', businessId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toUser);
}
