import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { notifyAtCommit } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { diffResource, type Changes } from './changes.ts';
import { encodeData } from './codec.ts';
import { commitPayload } from './filter.ts';
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
export const namedEvent = (resourceType: ResourceType, name: string, object: { id: string }): NewEvent => ({
  type: `${resourceType}.${name}`,
  resourceType,
  resourceId: object.id,
  object,
});

export interface EventMeta {
  businessId: string;
  actor: { type: string; id: string; name: string | null };
  requestId: string | null;
  idempotencyKey: string | null;
  now: string;
}

/**
 * Appends a write's events with its context, in the write's transaction: takes the business's next
 * sequence numbers from its `event` counter, then inserts each event. The write holds its
 * business's write lock (src/write/clock.ts), so sequences are handed out in commit order and
 * without gaps (a rolled-back write gives its numbers back with its transaction). A resource's
 * version is one more than its last event's: earlier events of this write are visible to the
 * insert, so two events of one resource in one write count 1, 2. On PostgreSQL the other instances
 * are told on `channel` (`pg_notify`, delivered at commit: src/events/filter.ts says in what form);
 * SQLite has no other instances to tell. `traceParent` is kept with each event: its webhook
 * attempts join that trace (src/telemetry).
 */
export async function appendEvents(
  db: Db,
  meta: EventMeta,
  events: NewEvent[],
  channel: string,
  traceParent: string | null = null,
): Promise<void> {
  if (events.length === 0) return;
  const actor = JSON.stringify(meta.actor);
  const {
    rows: [taken],
  } = await db.executeQuery(takeSequencesQuery(db, { businessId: meta.businessId, count: events.length }));
  const first = Number(taken.value) - events.length + 1;
  for (const [i, e] of events.entries()) {
    await db.executeQuery(
      insertEventQuery(db, {
        businessId: meta.businessId,
        sequence: first + i,
        id: newId('evt'),
        type: e.type,
        resourceType: e.resourceType,
        resourceId: e.resourceId,
        occurredAt: meta.now,
        actor,
        requestId: meta.requestId,
        idempotencyKey: meta.idempotencyKey,
        traceParent,
        data: encodeData(e.changes === undefined ? { object: e.object } : { object: e.object, changes: e.changes }),
      }),
    );
  }
  // What the commit holds first, for filtered long polls; then the bare business id earlier releases hear.
  const detailed = commitPayload(meta.businessId, events);
  if (detailed !== null) await notifyAtCommit(db, channel, detailed);
  await notifyAtCommit(db, channel, meta.businessId);
}

/** The business's next `count` sequence numbers: answers the last of them. */
const takeSequencesQuery = statement((db, v: { businessId: string; count: number }) =>
  db
    .insertInto('business_counters')
    .values({ business_id: v.businessId, name: 'event', value: v.count })
    .onConflict((oc) =>
      oc.columns(['business_id', 'name']).doUpdateSet({ value: sql`business_counters.value + excluded.value` }),
    )
    .returning('value'),
);

/** One event; its resource's version is one more than the resource's last event's (the end of its index range: one row). */
const insertEventQuery = statement(
  (
    db,
    v: {
      businessId: string;
      sequence: number;
      id: string;
      type: string;
      resourceType: string;
      resourceId: string;
      occurredAt: string;
      actor: string;
      requestId: string | null;
      idempotencyKey: string | null;
      traceParent: string | null;
      data: Buffer;
    },
  ) => {
    const lastVersion = db
      .selectFrom('events')
      .select('resource_version')
      .where('business_id', '=', v.businessId)
      .where('resource_type', '=', v.resourceType)
      .where('resource_id', '=', v.resourceId)
      .orderBy('sequence', 'desc')
      .limit(1);
    return db.insertInto('events').values({
      business_id: v.businessId,
      sequence: v.sequence,
      id: v.id,
      type: v.type,
      resource_type: v.resourceType,
      resource_id: v.resourceId,
      resource_version: sql<number>`coalesce((${lastVersion}), 0) + 1`,
      occurred_at: v.occurredAt,
      actor: v.actor,
      request_id: v.requestId,
      idempotency_key: v.idempotencyKey,
      data: v.data,
      trace_parent: v.traceParent,
    });
  },
);

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
 * Deletes each business's oldest events, up to its first event that occurred at or after `before`,
 * at most `batch` per statement, by key: a business keeps one unbroken run of sequences, oldest to
 * latest, so the feed never has a hole inside what it keeps. (Sequences follow commits, and the
 * time an event carries is its write's start, so times are not strictly in sequence order; the
 * demo's events carry their records' own times. An old event behind a newer one stays until the
 * newer one goes.) Between statements the event loop gets a turn. Returns how many.
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
