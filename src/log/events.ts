import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Db } from '../db/types.ts';
import { diffResource, type Changes } from './changes.ts';
import { toIso } from '../lib/time.ts';

export type ResourceType =
  | 'order'
  | 'item'
  | 'buyer'
  | 'price_list'
  | 'invoice'
  | 'api_key'
  | 'webhook_endpoint'
  | 'user'
  | 'shipment';

/**
 * Every event the feed and webhooks carry: `<resource type>.<action>`, with the actions each
 * resource's changes have. `namedEvent` takes only these, so a new kind of event is named here,
 * where the feed's and the webhooks' filters check the types they are given.
 */
export const EVENT_TYPES = {
  order: ['created', 'updated', 'deleted', 'ingested', 'acknowledged'],
  shipment: ['created', 'updated', 'voided'],
  item: ['created', 'updated', 'deleted'],
  buyer: ['created', 'updated'],
  price_list: ['created', 'updated'],
  invoice: ['created', 'updated'],
  api_key: ['created', 'updated', 'revoked'],
  webhook_endpoint: ['created', 'updated', 'paused', 'disabled', 'deleted'],
  user: ['created', 'updated', 'password_changed', 'password_reset'],
} as const satisfies Record<ResourceType, readonly string[]>;
export type EventAction<R extends ResourceType> = (typeof EVENT_TYPES)[R][number];

/** An event a write asks for; the write runner appends it with the write's own context. */
export interface NewEvent {
  type: string;
  resourceType: ResourceType;
  resourceId: string;
  /** The resource as its GET returns it after the change. */
  object: { id: string };
  changes?: Changes;
}

export const createdEvent = (resourceType: ResourceType, object: { id: string }): NewEvent => ({
  type: `${resourceType}.created`,
  resourceType,
  resourceId: object.id,
  object,
});

export const updatedEvent = (resourceType: ResourceType, before: { id: string }, after: { id: string }): NewEvent => ({
  type: `${resourceType}.updated`,
  resourceType,
  resourceId: after.id,
  object: after,
  changes: diffResource(before, after),
});

/** Deleted, ingested, revoked: a named change whose object says what it did. */
export const namedEvent = <R extends ResourceType>(
  resourceType: R,
  name: EventAction<R>,
  object: { id: string },
): NewEvent => ({
  type: `${resourceType}.${name}`,
  resourceType,
  resourceId: object.id,
  object,
});

/**
 * The business's last event sequence (0 before its first event), read without a lock: the
 * committed value of its counter, which is the highest committed event's (they commit together),
 * and stays right when retention has purged every event of a quiet business.
 */
export async function lastSequence(db: Db, businessId: string): Promise<number> {
  const row = await db
    .selectFrom('business_counters')
    .select('value')
    .where('business_id', '=', businessId)
    .where('name', '=', 'event')
    .executeTakeFirst();
  return Number(row?.value ?? 0);
}

const PURGE_BATCH = 5_000;

/**
 * Deletes each business's oldest events up to its first one at or after `before`, `batch` per
 * statement, by key, so what a business keeps is one unbroken run of sequences. Times are not
 * strictly in sequence order, so an old event behind a newer one stays until the newer one goes.
 * Returns how many.
 */
export async function purgeEventsBefore(db: Db, before: string, batch = PURGE_BATCH): Promise<number> {
  const businesses = await db
    .selectFrom('business_counters')
    .select('business_id')
    .where('name', '=', 'event')
    .execute();
  let total = 0;
  for (const { business_id: businessId } of businesses) {
    // Most businesses have nothing to purge in a given hour: their oldest event says so.
    if ((await expiredPrefix(db, businessId, before, 1)).count === 0) continue;
    for (;;) {
      const { count, last } = await expiredPrefix(db, businessId, before, batch);
      if (count === 0) break;
      await db.deleteFrom('events').where('business_id', '=', businessId).where('sequence', '<=', last).execute();
      total += count;
      await nextTurn();
      if (count < batch) break;
    }
  }
  return total;
}

/** Of the business's oldest `limit` events, how many in a row occurred before `before`, and the last one's sequence. */
async function expiredPrefix(
  db: Db,
  businessId: string,
  before: string,
  limit: number,
): Promise<{ count: number; last: number }> {
  const oldest = await db
    .selectFrom('events')
    .select(['sequence', 'occurred_at'])
    .where('business_id', '=', businessId)
    .orderBy('sequence')
    .limit(limit)
    .execute();
  const kept = oldest.findIndex((e) => toIso(e.occurred_at) >= before);
  const count = kept === -1 ? oldest.length : kept;
  return { count, last: count === 0 ? 0 : Number(oldest[count - 1].sequence) };
}
