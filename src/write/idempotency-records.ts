import type { Insertable } from 'kysely';
import type { Db } from '../db/types.ts';
import type { IdempotencyKeyTable } from './table.ts';

/** The response columns of an idempotency record. */
export interface StoredResponse {
  response_status: number;
  response_headers: string | null;
  response_body: string;
}

export async function findRecord(db: Db, businessId: string, key: string) {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('key', '=', key)
    .executeTakeFirst();
}

export type IdempotencyRecord = NonNullable<Awaited<ReturnType<typeof findRecord>>>;

/** Inserts a record; with `ignoreConflict`, a record already there (a twin's) is kept. */
export async function insertRecord(
  db: Db,
  record: Insertable<IdempotencyKeyTable>,
  ignoreConflict = false,
): Promise<void> {
  const insert = db.insertInto('idempotency_keys').values(record);
  await (ignoreConflict ? insert.onConflict((oc) => oc.doNothing()) : insert).execute();
}

/** Stores the write's answer in its record, in the write's transaction. */
export async function completeRecord(db: Db, businessId: string, key: string, response: StoredResponse): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set(response)
    .where('business_id', '=', businessId)
    .where('key', '=', key)
    .execute();
}

export async function deleteExpiredRecord(db: Db, businessId: string, key: string, now: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('business_id', '=', businessId)
    .where('key', '=', key)
    .where('expires_at', '<=', now)
    .execute();
}

/** Deletes expired records; run on a timer so the table stays the size of one TTL of traffic. */
export async function purgeExpiredIdempotencyKeys(db: Db, now = new Date()): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('expires_at', '<=', now.toISOString())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
