import { sql } from 'kysely';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import type { Selectable } from 'kysely';
import { eventJsonParts, toEvent } from './mapper.ts';
import { isLiveBusiness } from '../businesses/repository.ts';
import type { EventTable } from './table.ts';
import { RESOURCE_TYPES, type Event } from './schema.ts';
import type { EventFilterFields } from '../log/filter.ts';

export interface EventFilter extends EventFilterFields {
  after: number;
  limit: number;
}

export interface EventPage<T = Event> {
  items: T[];
  lastSequence: number;
  hasMore: boolean;
}

/** The latest committed sequence and the oldest retained one (past the latest when all are purged). */
export async function sequenceRange(db: Db, businessId: string): Promise<{ oldest: number; latest: number }> {
  const {
    rows: [row],
  } = await sql<{ oldest: number | string | null; latest: number | string | null }>`select
      (select min(sequence) from events where business_id = ${businessId}) as oldest,
      (select value from business_counters where business_id = ${businessId} and name = 'event') as latest`.execute(db);
  const latest = Number(row.latest ?? 0);
  return { oldest: row.oldest === null ? latest + 1 : Number(row.oldest), latest };
}

/** `latest`: the last sequence given; when none is retained (a sandbox just reset), the message says so. */
export const eventsGone = (oldest: number, latest: number) =>
  new ApiError(
    'GONE',
    oldest > latest
      ? `Events up to ${latest} are no longer retained, and none after it yet; the next is ${latest + 1}`
      : `Events up to ${oldest - 1} are no longer retained; the oldest is ${oldest}`,
    undefined,
    `Load the resource's export (it names the sequence it holds) and follow the feed from there`,
  );

/**
 * An `after` past the latest event: a sequence of another business or sandbox, or of a database
 * since restored. Answering an empty page would let the reader skip every event up to it unseen.
 */
export const eventsAhead = (after: number, latest: number) =>
  new ApiError(
    'CONFLICT',
    `after is ${after}, past this business's latest event, ${latest}: a sequence of another business or ` +
      'sandbox, or of a database since restored',
    undefined,
    `Load the resource's export (it names the sequence it holds) and follow the feed from there`,
  );

/**
 * A page of events after `after`, ascending, bounded by the latest sequence read first: sequences
 * commit in order (src/log/events.ts), so all up to it are visible. `lastSequence` moves past
 * events the filters skip, so a filtered reader does not read them again.
 */
export async function readEvents(
  db: Db,
  businessId: string,
  filter: EventFilter,
): Promise<EventPage<Selectable<EventTable>>> {
  const { oldest, latest } = await sequenceRange(db, businessId);
  if (filter.after < oldest - 1) throw eventsGone(oldest, latest);
  if (filter.after > latest) throw eventsAhead(filter.after, latest);
  if (latest === filter.after) return { items: [], lastSequence: filter.after, hasMore: false };
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

/** The first `limit` of `rows` (read with one more), and the sequence seen up to: the last row's, or `bound`. */
export function pageOf<T extends { sequence: number | string }>(rows: T[], limit: number, bound: number): EventPage<T> {
  const hasMore = rows.length > limit;
  const items = rows.slice(0, limit);
  return { items, lastSequence: hasMore ? Number(items[items.length - 1].sequence) : bound, hasMore };
}

export type Filters = Omit<EventFilter, 'after' | 'limit'> & { hiddenResourceTypes?: string[] };

/** Events the filters take (types with `order.*` wildcards, resource type and id), unordered. */
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

/** An index range holding events in sequence order: one type, one kind of resource, or one resource. */
type Range = { type: string } | { resourceType: string; resourceId?: string };

/**
 * Ranges whose union holds every event the filters take, so a filtered page reads only its own
 * events; null without filters. A resource id without its type is looked for under every type.
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
 * Up to `limit` events the filters take, in `direction`, within (after, bound]: each range is read
 * in index order up to `limit`, their sequences merged, then only those rows read. The caller
 * selects the columns.
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
  // Ranges read sequences only, so the index answers alone (asked for whole rows, SQLite walked
  // the log's key instead); the page's rows are then read by key.
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

/** The newest events the filters take (the console): what retention removed is simply absent, never a 410. */
export async function listLatestEvents(
  db: Db,
  businessId: string,
  filter: Omit<EventFilter, 'after'> & { hiddenResourceTypes?: string[] },
): Promise<Event[]> {
  const rows = await filteredEvents(db, businessId, filter, {}, filter.limit, 'desc').selectAll().execute();
  const livemode = await isLiveBusiness(db, businessId);
  return rows.map((row) => toEvent(row, livemode));
}

export async function listEvents(db: Db, businessId: string, filter: EventFilter): Promise<EventPage> {
  const [page, livemode] = await Promise.all([readEvents(db, businessId, filter), isLiveBusiness(db, businessId)]);
  return { ...page, items: page.items.map((row) => toEvent(row, livemode)) };
}

/** A page as the feed's JSON, assembled from the stored parts. */
export async function renderEvents(db: Db, businessId: string, filter: EventFilter): Promise<EventPage<Buffer[]>> {
  const [page, livemode] = await Promise.all([readEvents(db, businessId, filter), isLiveBusiness(db, businessId)]);
  return { ...page, items: page.items.map((row) => eventJsonParts(row, livemode)) };
}

const ITEMS = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');

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

/** Soft-deleted rows count. */
export async function resourceExists(db: Db, businessId: string, type: HistoryResource, id: string): Promise<boolean> {
  const row = await db
    .selectFrom(RESOURCE_TABLES[type])
    .select('id')
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row !== undefined;
}
