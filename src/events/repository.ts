import { sql } from 'kysely';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import type { Selectable } from 'kysely';
import { eventJsonParts, toEvent } from './mapper.ts';
import type { EventTable } from './table.ts';
import { RESOURCE_TYPES, type Event } from './schema.ts';
import type { EventFilterFields } from './filter.ts';

export interface EventFilter extends EventFilterFields {
  after: number;
  limit: number;
}

export interface EventPage<T = Event> {
  items: T[];
  lastSequence: number;
  hasMore: boolean;
}

/**
 * The latest sequence (the business's event counter, as committed) and the oldest retained one
 * (after the latest when retention has purged them all); one statement.
 */
export async function sequenceRange(db: Db, businessId: string): Promise<{ oldest: number; latest: number }> {
  const {
    rows: [row],
  } = await sql<{ oldest: number | string | null; latest: number | string | null }>`select
      (select min(sequence) from events where business_id = ${businessId}) as oldest,
      (select value from business_counters where business_id = ${businessId} and name = 'event') as latest`.execute(db);
  const latest = Number(row.latest ?? 0);
  return { oldest: row.oldest === null ? latest + 1 : Number(row.oldest), latest };
}

export const eventsGone = (oldest: number) =>
  new ApiError(
    'GONE',
    `Events up to ${oldest - 1} are no longer retained; the oldest is ${oldest}`,
    undefined,
    `Load the resource's export (it names the sequence it holds) and follow the feed from there`,
  );

/**
 * A page of the business's events after `after`, ascending. The latest sequence is read first and
 * bounds the page: sequences commit in order (src/events/log.ts), so every event up to it is
 * visible, and `lastSequence` never passes an event the page could not see. When filters skip
 * events, `lastSequence` still moves past them, so a filtered reader does not read them again.
 */
export async function readEvents(
  db: Db,
  businessId: string,
  filter: EventFilter,
): Promise<EventPage<Selectable<EventTable>>> {
  const { oldest, latest } = await sequenceRange(db, businessId);
  if (filter.after < oldest - 1) throw eventsGone(oldest);
  if (latest <= filter.after) return { items: [], lastSequence: filter.after, hasMore: false };
  const rows = await filteredEvents(
    db,
    businessId,
    filter,
    { after: filter.after, bound: latest },
    filter.limit + 1,
    'asc',
  )
    .selectAll()
    .execute();
  return pageOf(rows, filter.limit, latest);
}

/** The first `limit` of `rows` (read with one more), and the sequence a reader has seen up to: its last row's, or `bound`. */
export function pageOf<T extends { sequence: number | string }>(rows: T[], limit: number, bound: number): EventPage<T> {
  const hasMore = rows.length > limit;
  const items = rows.slice(0, limit);
  return { items, lastSequence: hasMore ? Number(items[items.length - 1].sequence) : bound, hasMore };
}

export type Filters = Omit<EventFilter, 'after' | 'limit'> & { hiddenResourceTypes?: string[] };

/** The business's events that the filters take (types with `order.*` wildcards, resource type and id), unordered. */
function matching(db: Db, businessId: string, filter: Filters) {
  let query = db.selectFrom('events').where('business_id', '=', businessId);
  if (filter.resourceType) query = query.where('resource_type', '=', filter.resourceType);
  if (filter.hiddenResourceTypes && filter.hiddenResourceTypes.length > 0)
    query = query.where('resource_type', 'not in', filter.hiddenResourceTypes);
  if (filter.resourceId) query = query.where('resource_id', '=', filter.resourceId);
  if (filter.types && filter.types.length > 0) {
    const exact = filter.types.filter((t) => !t.endsWith('.*'));
    const kinds = filter.types.filter((t) => t.endsWith('.*')).map((t) => t.slice(0, -2));
    query = query.where((eb) =>
      eb.or([
        ...(exact.length > 0 ? [eb('type', 'in', exact)] : []),
        ...(kinds.length > 0 ? [eb('resource_type', 'in', kinds)] : []),
      ]),
    );
  }
  return query;
}

/**
 * An index range that holds events in sequence order (src/db/migrations/0009 and 0036): one type,
 * one kind of resource, or one resource.
 */
type Range = { type: string } | { resourceType: string; resourceId?: string };

/**
 * The ranges whose union holds every event the filters take, so that a filtered page reads only
 * its own events (and at most a page from each range), never the ones it skips; null without filters
 * (the log's own key). A resource id without its type is looked for under every type.
 */
function rangesOf(filter: Filters): Range[] | null {
  if (filter.resourceId) {
    return (filter.resourceType ? [filter.resourceType] : RESOURCE_TYPES).map((resourceType) => ({
      resourceType,
      resourceId: filter.resourceId,
    }));
  }
  if (filter.types && filter.types.length > 0) {
    return [...new Set(filter.types)].map((t) => (t.endsWith('.*') ? { resourceType: t.slice(0, -2) } : { type: t }));
  }
  return filter.resourceType ? [{ resourceType: filter.resourceType }] : null;
}

/**
 * Up to `limit` events the filters take, in `direction` of sequence, within (after, bound]. Each
 * range is read in its index's order and stops at `limit`; the ranges' sequences are merged, and
 * then only those rows are read. The filters a range does not stand for apply within it. The
 * caller selects the columns.
 */
export function filteredEvents(
  db: Db,
  businessId: string,
  filter: Filters,
  within: { after?: number; bound?: number },
  limit: number,
  direction: 'asc' | 'desc',
) {
  const ranges = rangesOf(filter);
  // Within a range, the filters it stands for hold already.
  const rest: Filters =
    ranges === null
      ? filter
      : filter.resourceId
        ? { ...filter, resourceType: undefined, resourceId: undefined }
        : { ...filter, types: undefined };
  const read = (range?: Range) => {
    let query = matching(db, businessId, rest);
    if (within.after !== undefined) query = query.where('sequence', '>', within.after);
    if (within.bound !== undefined) query = query.where('sequence', '<=', within.bound);
    if (range && 'type' in range) query = query.where('type', '=', range.type);
    if (range && 'resourceType' in range) query = query.where('resource_type', '=', range.resourceType);
    if (range && 'resourceId' in range && range.resourceId !== undefined)
      query = query.where('resource_id', '=', range.resourceId);
    return query.orderBy('sequence', direction).limit(limit);
  };
  if (ranges === null) return read();
  /*
   * Each range reads sequences only, which its index holds (so the index answers on its own: asked
   * for whole rows, SQLite without statistics walked the log's key by sequence and tested each event
   * instead); the page's rows are then read by key.
   */
  const picks = ranges.map((range, i) => db.selectFrom(read(range).select('sequence').as(`r${i}`)).select('sequence'));
  const sequences = db
    .selectFrom(picks.reduce((all, pick) => all.union(pick)).as('u'))
    .select('u.sequence')
    .orderBy('u.sequence', direction)
    .limit(limit);
  return db
    .selectFrom('events')
    .where('business_id', '=', businessId)
    .where('sequence', 'in', sequences)
    .orderBy('sequence', direction);
}

/**
 * The newest `limit` events the filters take, newest first (the console's feed and timelines):
 * whatever retention removed is simply not there, never a 410.
 */
export async function listLatestEvents(
  db: Db,
  businessId: string,
  filter: Omit<EventFilter, 'after'> & { hiddenResourceTypes?: string[] },
): Promise<Event[]> {
  const rows = await filteredEvents(db, businessId, filter, {}, filter.limit, 'desc').selectAll().execute();
  return rows.map(toEvent);
}

/** A page of events as objects (the CLI, tests). */
export async function listEvents(db: Db, businessId: string, filter: EventFilter): Promise<EventPage> {
  const page = await readEvents(db, businessId, filter);
  return { ...page, items: page.items.map(toEvent) };
}

/** A page of events as the JSON the feed answers, put together from the stored rows (each event's JSON in parts). */
export async function renderEvents(db: Db, businessId: string, filter: EventFilter): Promise<EventPage<Buffer[]>> {
  const page = await readEvents(db, businessId, filter);
  return { ...page, items: page.items.map(eventJsonParts) };
}

const ITEMS = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');

/** The page's JSON: its events' parts copied once into one buffer. */
export function eventPageJson(page: EventPage<Buffer[]>): Buffer {
  const parts: Buffer[] = [ITEMS];
  page.items.forEach((event, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(...event);
  });
  parts.push(Buffer.from(`],"lastSequence":${page.lastSequence},"hasMore":${page.hasMore}}`));
  return Buffer.concat(parts);
}

const RESOURCE_TABLES = {
  order: 'orders',
  item: 'items',
  buyer: 'phantoms',
  invoice: 'invoices',
  shipment: 'shipments',
} as const;
export type HistoryResource = keyof typeof RESOURCE_TABLES;

/** Whether the business has (or had: soft-deleted rows count) this resource. */
export async function resourceExists(db: Db, businessId: string, type: HistoryResource, id: string): Promise<boolean> {
  const row = await db
    .selectFrom(RESOURCE_TABLES[type])
    .select('id')
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row !== undefined;
}
