import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { anyOf, forUpdate, forUpdateSkipLocked, skipLockedClause } from '../db/dialect.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { insertRows } from '../db/bulk.ts';
import { lastSequence } from '../log/events.ts';
import { filteredEvents, pageOf, type Filters } from '../events/repository.ts';
import { newId } from '../lib/ids.ts';
import { readJson } from '../lib/json.ts';
import type { WriteContext } from '../write/runner.ts';
import type { DeliveryStatus } from './table.ts';

const QUEUE_BATCH = 500;
const ACTIVE: DeliveryStatus[] = ['queued', 'pending', 'delivering'];

/** Empty or `*` takes all types. */
function endpointFilter(eventTypes: unknown): Filters {
  const types = readJson<string[]>(eventTypes) ?? [];
  return types.length === 0 || types.includes('*') ? {} : { types };
}

interface EventHead {
  sequence: number | string;
  id: string;
  type: string;
  resource_type: string;
  resource_id: string;
}

/**
 * Queues deliveries of `heads` to an endpoint. A resource's deliveries go one at a time: one whose
 * resource has an active delivery waits as `queued` until that one finishes (`finishDelivery`), so
 * an endpoint gets a resource's events in order while other resources do not wait.
 */
async function queueDeliveries(
  ctx: WriteContext,
  endpointId: string,
  heads: EventHead[],
  replay: boolean,
): Promise<number> {
  if (heads.length === 0) return 0;
  const { trx } = ctx;
  const keys = [...new Set(heads.map((h) => `${h.resource_type}:${h.resource_id}`))];
  const busy = new Set(
    (
      await trx
        .selectFrom('webhook_deliveries')
        .select('resource_key')
        .distinct()
        .where('endpoint_id', '=', endpointId)
        .where('status', 'in', ACTIVE)
        .where(anyOf(trx, 'resource_key', keys))
        .execute()
    ).map((r) => r.resource_key),
  );
  const rows = heads.map((h) => {
    const key = `${h.resource_type}:${h.resource_id}`;
    const status = busy.has(key) ? 'queued' : 'pending';
    busy.add(key);
    return [newId('whd'), Number(h.sequence), h.id, h.type, key, status];
  });
  await insertRows(
    trx,
    'webhook_deliveries',
    ['id', 'sequence', 'event_id', 'event_type', 'resource_key', 'status'],
    rows,
    {
      business_id: ctx.businessId,
      endpoint_id: endpointId,
      payload: null,
      replay: replay ? '1' : '0',
      attempts: 0,
      due_at: ctx.now,
      lease_token: null,
      created_at: ctx.now,
      finished_at: null,
    },
  );
  return rows.length;
}

/** The endpoint's next events after `after`, at most a batch, and the sequence they reach (past skipped types). */
async function eventHeads(
  db: Db,
  businessId: string,
  filter: Filters,
  after: number,
  bound: number,
): Promise<{ heads: EventHead[]; until: number }> {
  const rows = await filteredEvents(db, businessId, filter, { after, bound }, QUEUE_BATCH + 1, 'asc')
    .select(['sequence', 'id', 'type', 'resource_type', 'resource_id'])
    .execute();
  const page = pageOf(rows, QUEUE_BATCH, bound);
  return { heads: page.items, until: page.lastSequence };
}

/**
 * Locks endpoints' rows, in id order so batches never wait in a circle. Whatever changes an
 * endpoint's deliveries takes its row first, and so does queueing, so a delivery is never queued
 * behind one that finishes unseen in a concurrent transaction (it would wait forever).
 */
export async function lockEndpoints(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await forUpdate(
    db,
    db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where(anyOf(db, 'id', [...ids].sort()))
      .orderBy('id'),
  ).execute();
}

/** Queueing's answer when another transaction holds the endpoint's row: "look again shortly". */
export const ENDPOINT_HELD = -1;

async function lockEndpoint(db: Db, id: string) {
  return forUpdateSkipLocked(
    db,
    db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id),
  ).executeTakeFirst();
}

/**
 * Queues deliveries of the log's next events for an endpoint and moves its cursor past them. One
 * instance at a time holds the endpoint's row, and sequences become visible in order, so no event
 * is queued twice or passed over. Returns how many events it looked at (0: nothing to do now).
 */
export async function queueFromLog(ctx: WriteContext, endpointId: string): Promise<number> {
  const endpoint = await lockEndpoint(ctx.trx, endpointId);
  if (!endpoint) return ENDPOINT_HELD;
  if (endpoint.status !== 'enabled' || endpoint.deleted_at !== null) return 0;
  const cursor = Number(endpoint.cursor_sequence);
  const latest = await lastSequence(ctx.trx, ctx.businessId);
  if (latest <= cursor) return 0;
  const { heads, until } = await eventHeads(
    ctx.trx,
    ctx.businessId,
    endpointFilter(endpoint.event_types),
    cursor,
    latest,
  );
  await queueDeliveries(ctx, endpointId, heads, false);
  await ctx.trx.updateTable('webhook_endpoints').set({ cursor_sequence: until }).where('id', '=', endpointId).execute();
  return until - cursor;
}

/** As `queueFromLog`, for a replay's range. */
export async function queueFromReplay(ctx: WriteContext, replayId: string): Promise<number> {
  const replay = await ctx.trx
    .selectFrom('webhook_replays')
    .selectAll()
    .where('id', '=', replayId)
    .where('finished_at', 'is', null)
    .executeTakeFirst();
  if (!replay) return 0;
  const endpoint = await lockEndpoint(ctx.trx, replay.endpoint_id);
  if (!endpoint) return ENDPOINT_HELD;
  if (endpoint.status !== 'enabled' || endpoint.deleted_at !== null) return 0;
  const cursor = Number(replay.cursor_sequence);
  const { heads, until } = await eventHeads(
    ctx.trx,
    ctx.businessId,
    endpointFilter(endpoint.event_types),
    cursor,
    Number(replay.until_sequence),
  );
  await queueDeliveries(ctx, endpoint.id, heads, true);
  await ctx.trx
    .updateTable('webhook_replays')
    .set({ cursor_sequence: until, finished_at: until >= Number(replay.until_sequence) ? ctx.now : null })
    .where('id', '=', replayId)
    .execute();
  return Math.max(1, until - cursor);
}

/** The worker's work across businesses; `watched`: businesses whose commits should wake it. */
export async function queueWork(db: Db) {
  const enabled = await db
    .selectFrom('webhook_endpoints as e')
    .leftJoin('business_counters as c', (join) =>
      join.onRef('c.business_id', '=', 'e.business_id').on('c.name', '=', 'event'),
    )
    .select(['e.id', 'e.business_id', 'e.cursor_sequence', 'c.value'])
    .where('e.status', '=', 'enabled')
    .where(whereLive('e'))
    .execute();
  const endpoints = enabled.filter((e) => e.value !== null && Number(e.value) > Number(e.cursor_sequence));
  const replays = await db
    .selectFrom('webhook_replays as r')
    .innerJoin('webhook_endpoints as e', 'e.id', 'r.endpoint_id')
    .select(['r.id', 'r.business_id'])
    .where('r.finished_at', 'is', null)
    .where('e.status', '=', 'enabled')
    .where(whereLive('e'))
    .execute();
  return { endpoints, replays, watched: new Set(enabled.map((e) => e.business_id)) };
}

/** A test event's delivery: its body kept with it, waiting for nothing. */
export async function queueTestDelivery(
  ctx: WriteContext,
  endpointId: string,
  eventId: string,
  payload: string,
): Promise<string> {
  const id = newId('whd');
  await ctx.trx
    .insertInto('webhook_deliveries')
    .values({
      id,
      business_id: ctx.businessId,
      endpoint_id: endpointId,
      sequence: null,
      event_id: eventId,
      event_type: 'webhook.test',
      resource_key: `test:${id}`,
      payload,
      replay: 0,
      status: 'pending',
      attempts: 0,
      due_at: ctx.now,
      lease_token: null,
      created_at: ctx.now,
      finished_at: null,
    })
    .execute();
  return id;
}

export interface Claim {
  id: string;
  business_id: string;
  endpoint_id: string;
  sequence: number | string | null;
  event_id: string;
  resource_key: string;
  payload: string | null;
  attempts: number;
  lease_token: string;
}

/**
 * Claims due deliveries of enabled endpoints under a lease, in one statement (PostgreSQL skips
 * rows others are claiming). A delivery whose lease ran out (its instance died) is due again.
 */
export async function claimDeliveries(db: Db, now: string, leaseUntil: string, limit: number): Promise<Claim[]> {
  const token = newId('whd');
  const lock = skipLockedClause(db, 'd');
  const { rows } =
    await sql<Claim>`update webhook_deliveries set status = 'delivering', due_at = ${leaseUntil}, lease_token = ${token}
    where id in (select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.status in ('pending', 'delivering') and d.due_at <= ${now} and e.status = 'enabled' and ${whereLive('e')}
      order by d.due_at limit ${limit} ${lock})
    returning id, business_id, endpoint_id, sequence, event_id, resource_key, payload, attempts, lease_token`.execute(
      db,
    );
  return rows;
}

/** When the next delivery of an enabled endpoint falls due; a paused endpoint's backlog is not due. */
export async function nextDue(db: Db): Promise<string | null> {
  const { rows } = await sql<{ due: Date | string }>`select d.due_at as due from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id
    where d.status in ('pending', 'delivering') and e.status = 'enabled' and ${whereLive('e')}
    order by d.due_at limit 1`.execute(db);
  return rows.length === 0 ? null : new Date(rows[0].due).toISOString();
}

/** Makes each resource's next queued delivery (lowest sequence, then id) pending, once the one before finished. */
export async function releaseNext(db: Db, endpointId: string, resourceKeys: string[], now: string): Promise<void> {
  if (resourceKeys.length === 0) return;
  await sql`update webhook_deliveries set status = 'pending', due_at = ${now}
    where id in (select d.id from webhook_deliveries d
      where d.endpoint_id = ${endpointId} and ${anyOf(db, 'd.resource_key', resourceKeys)} and d.status = 'queued'
        and not exists (select 1 from webhook_deliveries e
          where e.endpoint_id = d.endpoint_id and e.resource_key = d.resource_key and e.status = 'queued'
            and (e.sequence < d.sequence or (e.sequence = d.sequence and e.id < d.id))))`.execute(db);
}

/** Cancels what is queued or pending; deliveries in flight finish. */
export async function cancelBacklog(db: Db, endpointId: string, now: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', finished_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', ['queued', 'pending'])
    .execute();
}

export async function purgeDeliveriesBefore(db: Db, before: string, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const ids = (
      await db.selectFrom('webhook_deliveries').select('id').where('finished_at', '<', before).limit(batch).execute()
    ).map((r) => r.id);
    if (ids.length === 0) return total;
    await db
      .deleteFrom('webhook_attempts')
      .where(anyOf(db, 'delivery_id', ids))
      .execute();
    await db
      .deleteFrom('webhook_deliveries')
      .where(anyOf(db, 'id', ids))
      .execute();
    total += ids.length;
    if (ids.length < batch) return total;
    await nextTurn();
  }
}
