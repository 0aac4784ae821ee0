import { sql } from 'kysely';
import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { diffResource, type Changes } from './changes.ts';

export type ResourceType = 'order' | 'item' | 'buyer' | 'price_list' | 'invoice' | 'api_key';

/** An event a write asks for; the write runner appends it with the write's own context. */
export interface NewEvent {
  type: string;
  resourceType: ResourceType;
  resourceId: string;
  /** The resource as its GET returns it after the change. */
  object: { id: string };
  changes?: Changes;
}

export const createdEvent = (resourceType: ResourceType, object: { id: string }): NewEvent =>
  ({ type: `${resourceType}.created`, resourceType, resourceId: object.id, object });

export const updatedEvent = (resourceType: ResourceType, before: { id: string }, after: { id: string }): NewEvent =>
  ({ type: `${resourceType}.updated`, resourceType, resourceId: after.id, object: after, changes: diffResource(before, after) });

/** Deleted, ingested, revoked: a named change whose object says what it did. */
export const namedEvent = (resourceType: ResourceType, name: string, object: { id: string }): NewEvent =>
  ({ type: `${resourceType}.${name}`, resourceType, resourceId: object.id, object });

export interface EventMeta {
  businessId: string;
  actor: { type: string; id: string; name: string | null };
  requestId: string | null;
  idempotencyKey: string | null;
  now: string;
}

/**
 * Takes `count` sequence numbers of the business, in the caller's transaction: the `event` counter
 * row's lock is held until commit, so on PostgreSQL a second writer of the business waits here
 * until the first commits, and sequences become visible in order, without gaps (a rolled-back
 * write gives its numbers back with its transaction). It is taken last in a write, so the lock
 * is held for the event insert and the commit only.
 */
async function takeSequences(db: Db, businessId: string, count: number): Promise<number> {
  const row = await db.insertInto('business_counters').values({ business_id: businessId, name: 'event', value: count })
    .onConflict((oc) => oc.columns(['business_id', 'name']).doUpdateSet((eb) => ({ value: eb('business_counters.value', '+', count) })))
    .returning('value').executeTakeFirstOrThrow();
  return Number(row.value);
}

/** The last resourceVersion of each resource, 0 for one without events yet. */
async function lastVersions(db: Db, businessId: string, events: NewEvent[]): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  for (const e of events) {
    const key = `${e.resourceType}/${e.resourceId}`;
    if (versions.has(key)) continue;
    const row = await db.selectFrom('events').select('resource_version')
      .where('business_id', '=', businessId).where('resource_type', '=', e.resourceType).where('resource_id', '=', e.resourceId)
      .orderBy('sequence', 'desc').limit(1).executeTakeFirst();
    versions.set(key, row?.resource_version ?? 0);
  }
  return versions;
}

/** Appends a write's events with its context, in its transaction. */
export async function appendEvents(db: Db, meta: EventMeta, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const versions = await lastVersions(db, meta.businessId, events);
  const last = await takeSequences(db, meta.businessId, events.length);
  const actor = JSON.stringify(meta.actor);
  await db.insertInto('events').values(events.map((e, i) => {
    const key = `${e.resourceType}/${e.resourceId}`;
    const version = versions.get(key)! + 1;
    versions.set(key, version);
    return {
      business_id: meta.businessId,
      sequence: last - events.length + 1 + i,
      id: newId('evt'),
      type: e.type,
      resource_type: e.resourceType,
      resource_id: e.resourceId,
      resource_version: version,
      occurred_at: meta.now,
      actor,
      request_id: meta.requestId,
      idempotency_key: meta.idempotencyKey,
      data: JSON.stringify(e.changes === undefined ? { object: e.object } : { object: e.object, changes: e.changes }),
    };
  })).execute();
}

/**
 * The business's last event sequence (0 before its first event), read without a lock: the
 * committed value of its counter, which is the highest committed event's (they commit together),
 * and stays right when retention has purged every event of a quiet business.
 */
export async function lastSequence(db: Db, businessId: string): Promise<number> {
  const row = await db.selectFrom('business_counters').select('value')
    .where('business_id', '=', businessId).where('name', '=', 'event').executeTakeFirst();
  return Number(row?.value ?? 0);
}

const PURGE_BATCH = 5_000;

/**
 * Deletes events that occurred before `before`, 5,000 per statement, so that no statement holds
 * locks or grows the log for long; between batches the event loop gets a turn. Returns how many.
 */
export async function purgeEventsBefore(db: Db, before: string, batch = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await sql`delete from events where id in (
      select id from events where occurred_at < ${before} order by occurred_at limit ${batch})`.execute(db);
    const deleted = Number(result.numAffectedRows ?? 0);
    total += deleted;
    if (deleted < batch) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
