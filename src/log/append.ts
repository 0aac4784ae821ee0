import { sql } from 'kysely';
import { notifyAtCommit, statementsAreRoundTrips } from '../db/dialect.ts';
import { statement } from '../db/statement.ts';
import { sendWrite } from '../db/pipeline.ts';
import type { Db } from '../db/types.ts';
import { nextCounterValue } from '../db/counters.ts';
import { newId } from '../lib/ids.ts';
import { encodeData } from './codec.ts';
import { commitPayload } from './filter.ts';
import type { NewEvent } from './events.ts';

export interface EventMeta {
  businessId: string;
  actor: { type: string; id: string; name: string | null };
  requestId: string | null;
  idempotencyKey: string | null;
  now: string;
}

/** One write's events, and what they share: the write's time, actor, request and trace. */
export interface WriteEvents {
  meta: EventMeta;
  events: NewEvent[];
  traceParent: string | null;
}

/**
 * Appends the events of one business's writes in their transaction, in the order given, under the
 * business's write lock (src/write/clock.ts): sequences from the business's `event` counter, in
 * commit order and without gaps. A resource's version is one more than its last event's. On
 * PostgreSQL the counter, every row and the other instances' notifications (src/log/filter.ts) are
 * one statement, however many writes: a group of writes appends all its events once, before its
 * COMMIT (src/write/groups.ts, decision 0070).
 */
export async function appendEvents(db: Db, writes: WriteEvents[], channel: string): Promise<void> {
  const rows = writes.flatMap((w) =>
    w.events.map((e) => ({
      id: newId('evt'),
      type: e.type,
      resourceType: e.resourceType,
      resourceId: e.resourceId,
      data: encodeData(e.changes === undefined ? { object: e.object } : { object: e.object, changes: e.changes }),
      occurredAt: w.meta.now,
      actor: JSON.stringify(w.meta.actor),
      requestId: w.meta.requestId,
      idempotencyKey: w.meta.idempotencyKey,
      traceParent: w.traceParent,
    })),
  );
  if (rows.length === 0) return;
  const businessId = writes[0].meta.businessId;
  if (writes.some((w) => w.meta.businessId !== businessId)) throw new Error('events of one business at a time');
  // What the commit holds first, for filtered long polls; then the bare business id earlier releases hear.
  const detailed = commitPayload(
    businessId,
    writes.flatMap((w) => w.events),
  );
  const notices = detailed === null ? [businessId] : [detailed, businessId];
  if (statementsAreRoundTrips(db)) {
    const column = <K extends keyof (typeof rows)[number]>(key: K) => rows.map((r) => r[key]);
    await sendWrite(
      db,
      appendQuery(db, {
        businessId,
        count: rows.length,
        ids: column('id'),
        types: column('type'),
        resourceTypes: column('resourceType'),
        resourceIds: column('resourceId'),
        data: column('data'),
        occurredAts: column('occurredAt'),
        actors: column('actor'),
        requestIds: column('requestId'),
        idempotencyKeys: column('idempotencyKey'),
        traceParents: column('traceParent'),
        channel,
        notices,
      }),
    );
    return;
  }
  const first = (await nextCounterValue(db, businessId, 'event', rows.length)) - rows.length + 1;
  for (const [i, row] of rows.entries()) {
    await db.executeQuery(insertEventQuery(db, { ...row, businessId, sequence: first + i }));
  }
  for (const notice of notices) await notifyAtCommit(db, channel, notice);
}

/** The last version of a resource among its stored events (the end of its index range: one row). */
const lastVersion = (db: Db, businessId: unknown, resourceType: unknown, resourceId: unknown) =>
  db
    .selectFrom('events')
    .select('resource_version')
    .where('business_id', '=', businessId as string)
    .where('resource_type', '=', resourceType as string)
    .where('resource_id', '=', resourceId as string)
    .orderBy('sequence', 'desc')
    .limit(1);

/** One event; earlier events of the write are visible to it, so its version counts after theirs. */
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
  ) =>
    db.insertInto('events').values({
      business_id: v.businessId,
      sequence: v.sequence,
      id: v.id,
      type: v.type,
      resource_type: v.resourceType,
      resource_id: v.resourceId,
      resource_version: sql<number>`coalesce((${lastVersion(db, v.businessId, v.resourceType, v.resourceId)}), 0) + 1`,
      occurred_at: v.occurredAt,
      actor: v.actor,
      request_id: v.requestId,
      idempotency_key: v.idempotencyKey,
      data: v.data,
      trace_parent: v.traceParent,
    }),
);

/**
 * PostgreSQL: the counter, every event and the notifications as one statement, with one shape for
 * any number of events (arrays, one per column). One statement sees none of its own inserts, so a
 * resource's events in this statement count on from its stored last version by their order in it.
 */
const appendQuery = statement(
  (
    db,
    v: {
      businessId: string;
      count: number;
      ids: string[];
      types: string[];
      resourceTypes: string[];
      resourceIds: string[];
      data: Buffer[];
      occurredAts: string[];
      actors: string[];
      requestIds: (string | null)[];
      idempotencyKeys: (string | null)[];
      traceParents: (string | null)[];
      channel: string;
      notices: string[];
    },
  ) => sql`with taken as (
      insert into business_counters (business_id, name, value) values (${v.businessId}, 'event', ${v.count})
      on conflict (business_id, name) do update set value = business_counters.value + excluded.value
      returning value
    ), written as (
      select * from unnest(${v.ids}::text[], ${v.types}::text[], ${v.resourceTypes}::text[],
        ${v.resourceIds}::text[], ${v.data}::bytea[], ${v.occurredAts}::timestamptz[], ${v.actors}::jsonb[],
        ${v.requestIds}::text[], ${v.idempotencyKeys}::text[], ${v.traceParents}::text[])
        with ordinality as e(id, type, resource_type, resource_id, data, occurred_at, actor, request_id,
          idempotency_key, trace_parent, n)
    ), inserted as (
      insert into events (business_id, sequence, id, type, resource_type, resource_id, resource_version,
        occurred_at, actor, request_id, idempotency_key, data, trace_parent)
      select ${v.businessId}, taken.value - ${v.count} + e.n, e.id, e.type, e.resource_type, e.resource_id,
        coalesce((${lastVersion(db, v.businessId, sql.ref('e.resource_type'), sql.ref('e.resource_id'))}), 0)
          + row_number() over (partition by e.resource_type, e.resource_id order by e.n),
        e.occurred_at, e.actor, e.request_id, e.idempotency_key, e.data, e.trace_parent
      from taken, written as e
    )
    select pg_notify(${v.channel}, notice) from unnest(${v.notices}::text[]) as notice`,
);
