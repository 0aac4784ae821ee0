import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { analyzeTable, anyOf, forUpdate, forUpdateSkipLocked, skipLockedClause } from '../db/dialect.ts';
import { whereLive } from '../db/live.ts';
import type { Db } from '../db/types.ts';
import { insertRows } from '../db/bulk.ts';
import { lastSequence } from '../log/events.ts';
import { filteredEvents, pageOf, type Filters } from '../events/repository.ts';
import { newId } from '../lib/ids.ts';
import { readJson } from '../lib/json.ts';
import type { WriteContext } from '../write/runner.ts';
import type { DeliveryStatus } from './table.ts';

/** Events read from the log per endpoint and pass. */
const QUEUE_BATCH = 500;
const ACTIVE: DeliveryStatus[] = ['queued', 'pending', 'delivering'];

/** An endpoint's types as the feed's filter: empty or `*` takes all, `order.*` every order event. */
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
 * Queues deliveries of `heads` to an endpoint. A resource's deliveries go one at a time: one
 * whose resource already has a delivery queued, pending or in flight waits as `queued`, and is
 * made pending when the one before it succeeds or runs out of attempts (`finishDelivery`), so an
 * endpoint never receives an event of a resource before the earlier ones, and other resources do
 * not wait.
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

/**
 * The next events after `after` (up to `bound`) that the endpoint takes, at most a batch, through
 * the feed's own filtered read (src/events/repository.ts), and the sequence they take it to: the
 * last one's when the batch is full, else `bound`, past the events the types skip.
 */
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
 * Locks endpoints' rows until the transaction ends, waiting for them, in id order (so that two
 * batches never wait on each other in a circle). Whatever changes an endpoint's deliveries after
 * they were queued (an outcome that releases the next delivery of a resource, a status change)
 * takes its endpoint's row first: queueing holds that row too, so a delivery is never queued
 * behind one that finishes, unseen, in a concurrent transaction (it would wait forever).
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

/**
 * What queueing answers when the endpoint's row is held by another transaction (another instance
 * queueing it, or an outcome batch, on PostgreSQL): not "nothing to do", but "look again shortly".
 */
export const ENDPOINT_HELD = -1;

/** Takes the endpoint's row for this transaction; on PostgreSQL, skips it when another instance holds it. */
async function lockEndpoint(db: Db, id: string) {
  return forUpdateSkipLocked(
    db,
    db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id),
  ).executeTakeFirst();
}

/**
 * Queues the deliveries of the next events of the log for an endpoint, up to 500, and moves its
 * cursor past them. Only one instance does this for an endpoint at a time (the row is locked,
 * and skipped by others), and sequences become visible in order, so no event is queued twice or
 * passed over. Returns how many events it looked at (0: nothing more to do now).
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

/** As `queueFromLog`, for a replay: its range's events again, 500 per pass, in order. */
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

/**
 * The worker's list of work across businesses: endpoints with events to queue, open replays, and
 * every business with an enabled endpoint (`watched`: only their commits need to wake the worker).
 */
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

/**
 * Brings the planner's statistics of the deliveries table up to date. A replay or a burst of writes
 * can queue thousands of deliveries in a second, and autovacuum looks at a table only once a
 * minute: until then PostgreSQL takes the table for as small as it was and picks plans that read
 * every queued delivery per statement, which slowed a replay down severalfold.
 */
export async function refreshStatistics(db: Db): Promise<void> {
  await analyzeTable(db, 'webhook_deliveries');
}

/** A test event's delivery: its body is kept with it, and it waits for nothing. */
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
 * Claims up to `limit` due deliveries of enabled endpoints, with a lease until `leaseUntil`: one
 * statement, in which PostgreSQL skips rows another instance is claiming (`for update skip
 * locked`). A delivery whose lease ran out (its instance died) is due again.
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

/**
 * When the next delivery of an enabled endpoint falls due (a retry, or a lease running out), if
 * any. A paused endpoint's backlog is not due: counting it kept the worker waking at its shortest
 * interval with nothing to send.
 */
export async function nextDue(db: Db): Promise<string | null> {
  const { rows } = await sql<{ due: Date | string }>`select d.due_at as due from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id
    where d.status in ('pending', 'delivering') and e.status = 'enabled' and ${whereLive('e')}
    order by d.due_at limit 1`.execute(db);
  return rows.length === 0 ? null : new Date(rows[0].due).toISOString();
}

/**
 * The next delivery of each of these resources may go now that the one before it finished: one
 * statement for all of an endpoint's resources. A resource's next is its queued delivery with no
 * queued one before it (lowest sequence, then id).
 */
export async function releaseNext(db: Db, endpointId: string, resourceKeys: string[], now: string): Promise<void> {
  if (resourceKeys.length === 0) return;
  await sql`update webhook_deliveries set status = 'pending', due_at = ${now}
    where id in (select d.id from webhook_deliveries d
      where d.endpoint_id = ${endpointId} and ${anyOf(db, 'd.resource_key', resourceKeys)} and d.status = 'queued'
        and not exists (select 1 from webhook_deliveries e
          where e.endpoint_id = d.endpoint_id and e.resource_key = d.resource_key and e.status = 'queued'
            and (e.sequence < d.sequence or (e.sequence = d.sequence and e.id < d.id))))`.execute(db);
}

/** Drops an endpoint's backlog: what is queued or pending is cancelled (deliveries in flight finish). */
export async function cancelBacklog(db: Db, endpointId: string, now: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', finished_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', ['queued', 'pending'])
    .execute();
}

/** Finished deliveries older than `before` go, with their attempts, in batches. */
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
