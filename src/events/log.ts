import { setImmediate as nextTurn } from 'node:timers/promises';
import { CompiledQuery } from 'kysely';
import { runDeferred, type CommitValue, type Deferred } from '../db/deferred.ts';
import { hasServerFunctions } from '../db/dialect.ts';
import { callAndCommit, SqlText } from '../db/pg-call.ts';
import { literals } from '../db/pg-literals.ts';
import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { diffResource, type Changes } from './changes.ts';
import { encodeData, encodeDataAround } from './codec.ts';
import { toIso } from '../lib/time.ts';

export type ResourceType = 'order' | 'item' | 'buyer' | 'price_list' | 'invoice' | 'api_key' | 'webhook_endpoint' | 'user';

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
 * Takes `count` sequence numbers of the business, in the caller's transaction (SQLite: these
 * texts are SQLite's): the `event` counter row is taken last in a write, so sequences are handed
 * out in commit order and without gaps (a rolled-back write gives its numbers back with its
 * transaction); PostgreSQL does the same in `append_events` (migration 0020), holding the row's
 * lock until commit. These two statements run in every write, so they go to the driver as text
 * written once, not built and compiled by the query builder each time.
 */
const TAKE_SEQUENCES = `insert into business_counters (business_id, name, value) values (?, 'event', ?)
  on conflict (business_id, name) do update set value = business_counters.value + excluded.value returning value`;

/**
 * One event (SQLite). resourceVersion: one more than the resource's last event, read at the end of
 * its index range (one row, however long its history); earlier events of this write are visible
 * to it, so two events of one resource in one write count 1, 2.
 */
const INSERT_EVENT = `insert into events (business_id, sequence, id, type, resource_type, resource_id, resource_version,
    occurred_at, actor, request_id, idempotency_key, data)
  values (?, ?, ?, ?, ?, ?,
    coalesce((select resource_version from events where business_id = ? and resource_type = ? and resource_id = ?
      order by sequence desc limit 1), 0) + 1,
    ?, ?, ?, ?, ?)`;

/**
 * Appends a write's events with its context, as the last statement of its transaction, after
 * the write's `deferred` statements (src/db/deferred.ts), and answers the texts its commit values
 * took (placeholder to text; empty on SQLite, which takes none). On PostgreSQL it commits too: the
 * commit values' takes, the deferred statements, one call of `append_events` (migration 0020),
 * which also tells the other instances on `channel` (`pg_notify`, delivered at commit), and COMMIT
 * in one round trip, so the business's counters and count rows are locked only while the database
 * works, never while a reply waits for this process. An event whose data holds a placeholder goes
 * as its deflated parts around it, joined there with the taken text (`encodeDataAround`). SQLite
 * has no other instances to tell.
 */
export async function appendEvents(
  db: Db, meta: EventMeta, events: NewEvent[], channel: string, deferred: Deferred = { values: [], statements: [] },
): Promise<Map<string, string>> {
  const { values, statements } = deferred;
  if (events.length === 0) {
    const taken = new Map<string, string>();
    for (const value of values) taken.set(value.placeholder, await takeValue(db, value));
    await runDeferred(db, statements);
    return taken;
  }
  const actor = JSON.stringify(meta.actor);
  const payloads = events.map((e) => (e.changes === undefined ? { object: e.object } : { object: e.object, changes: e.changes }));
  const ids = events.map(() => newId('evt'));
  if (hasServerFunctions(db)) {
    const data = values.length === 0 ? payloads.map(encodeData) : dataToComplete(payloads, values);
    const results = await callAndCommit(db, 'append_events', [meta.businessId, ids, events.map((e) => e.type), events.map((e) => e.resourceType),
      events.map((e) => e.resourceId), data, meta.now, actor, meta.requestId, meta.idempotencyKey, channel],
      [...values.map((v) => v.take), ...values.map(checkTaken), ...statements]);
    // The checks' answers: each take's text, as every statement of the commit read it.
    return new Map(values.map((v, i) => [v.placeholder, (results[values.length + i][0] as { value: string }).value]));
  }
  const data = payloads.map(encodeData);
  await runDeferred(db, statements);
  const { rows: [taken] } = await db.executeQuery<{ value: number }>(CompiledQuery.raw(TAKE_SEQUENCES, [meta.businessId, events.length]));
  const first = Number(taken.value) - events.length + 1;
  for (const [i, e] of events.entries()) {
    await db.executeQuery(CompiledQuery.raw(INSERT_EVENT, [meta.businessId, first + i, ids[i], e.type, e.resourceType, e.resourceId,
      meta.businessId, e.resourceType, e.resourceId, meta.now, actor, meta.requestId, meta.idempotencyKey, data[i]]));
  }
  return new Map();
}

/** A commit value taken on its own (a write without events), and checked as the commit's message checks it. */
async function takeValue(db: Db, value: CommitValue): Promise<string> {
  await db.executeQuery(value.take);
  const { rows: [row] } = await db.executeQuery<{ value: string }>(checkTaken(value));
  return row.value;
}

/** Fails the commit, before anything else of it runs, when a take set no text or one that cannot be filled in (`commit_value`, migration 0026). */
const checkTaken = (value: CommitValue) => CompiledQuery.raw('select commit_value($1) as value', [value.setting]);

/**
 * PostgreSQL: the events' data as an array expression, each one deflated, or its parts joined
 * around the texts the commit took (`deflate_stored_block`, migration 0026, of the setting each
 * take left its text in).
 */
function dataToComplete(payloads: unknown[], values: CommitValue[]): SqlText {
  const settings = new Map(values.map((v) => [v.placeholder, v.setting]));
  const bytes = (b: Buffer) => `${literals([b])![0]}::bytea`;
  const elements = payloads.map((payload) => {
    const data = encodeDataAround(payload, values.map((v) => v.placeholder));
    if (Buffer.isBuffer(data)) return bytes(data);
    const joined = data.parts.flatMap((part, i) => (i === 0 ? [bytes(part)]
      : [`deflate_stored_block(commit_value(${literals([settings.get(data.fills[i - 1])])![0]}))`, bytes(part)]));
    return `(${joined.join(' || ')})`;
  });
  return new SqlText(`array[${elements.join(', ')}]::bytea[]`);
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
 * Deletes each business's oldest events, up to its first event that occurred at or after `before`,
 * at most `batch` per statement, by key: a business keeps one unbroken run of sequences, oldest to
 * latest, so the feed never has a hole inside what it keeps. (Sequences follow commits, and the
 * time an event carries is its write's start, so times are not strictly in sequence order; the
 * demo's events carry their records' own times. An old event behind a newer one stays until the
 * newer one goes.) Between statements the event loop gets a turn. Returns how many.
 */
export async function purgeEventsBefore(db: Db, before: string, batch = PURGE_BATCH): Promise<number> {
  const businesses = await db.selectFrom('business_counters').select('business_id').where('name', '=', 'event').execute();
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
async function expiredPrefix(db: Db, businessId: string, before: string, limit: number): Promise<{ count: number; last: number }> {
  const oldest = await db.selectFrom('events').select(['sequence', 'occurred_at']).where('business_id', '=', businessId)
    .orderBy('sequence').limit(limit).execute();
  const kept = oldest.findIndex((e) => toIso(e.occurred_at) >= before);
  const count = kept === -1 ? oldest.length : kept;
  return { count, last: count === 0 ? 0 : Number(oldest[count - 1].sequence) };
}
