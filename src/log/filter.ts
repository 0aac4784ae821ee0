/**
 * The feed's filters as one predicate, and what a commit tells other instances about its events,
 * so that a filtered long poll wakes only for a commit it would answer.
 */
export interface EventFilterFields {
  types?: string[];
  resourceType?: string;
  resourceId?: string;
}

/** An event as far as the filters look at it; `resourceId` is null where a commit left its ids out. */
export interface EventHead {
  type: string;
  resourceType: string;
  resourceId: string | null;
}

/** Whether the filters take the event. An unknown resource id (null) may be any: it is taken. */
export function filterTakes(filter: EventFilterFields, event: EventHead): boolean {
  if (filter.resourceType !== undefined && filter.resourceType !== event.resourceType) return false;
  if (filter.resourceId !== undefined && event.resourceId !== null && filter.resourceId !== event.resourceId)
    return false;
  if (filter.types === undefined || filter.types.length === 0) return true;
  return filter.types.includes(event.type) || filter.types.includes(`${event.resourceType}.*`);
}

/** A commit's events carry their ids up to this many distinct heads; beyond, the ids are left out. */
const MAX_HEADS = 64;
/** PostgreSQL refuses a notification of 8,000 bytes or more (and the transaction with it). */
const MAX_PAYLOAD = 7_000;

type Written = Array<{ type: string; resourceType: string; resourceId: string }>;

export function commitHeads(
  events: Written,
  withIds = events.length <= MAX_HEADS || distinctIds(events) <= MAX_HEADS,
): EventHead[] {
  return [
    ...new Map(
      events.map((e) => {
        const head = { type: e.type, resourceType: e.resourceType, resourceId: withIds ? e.resourceId : null };
        return [`${head.type}\u0000${head.resourceId}`, head] as const;
      }),
    ).values(),
  ];
}

const distinctIds = (events: Written) => new Set(events.map((e) => `${e.type}\u0000${e.resourceId}`)).size;

/**
 * Without ids when they would make it long; null when even its types would (the bare business id
 * then wakes every waiter). Sent just before the bare business id that older instances listen for
 * (a transaction's notifications arrive together and in order), so that a listener skips that one.
 */
export function commitPayload(businessId: string, events: Written): string | null {
  const text = (heads: EventHead[]) =>
    JSON.stringify({ businessId, events: heads.map((h) => [h.type, h.resourceType, h.resourceId]) });
  const full = text(commitHeads(events));
  if (full.length <= MAX_PAYLOAD) return full;
  const typesOnly = text(commitHeads(events, false));
  return typesOnly.length <= MAX_PAYLOAD ? typesOnly : null;
}

/** A notification's business and heads; heads are null for an older instance's bare business id (any event). */
export function readCommitPayload(payload: string): { businessId: string; heads: EventHead[] | null } | null {
  if (!payload.startsWith('{')) return { businessId: payload, heads: null };
  try {
    const parsed = JSON.parse(payload) as { businessId: string; events: Array<[string, string, string | null]> };
    return {
      businessId: parsed.businessId,
      heads: parsed.events.map(([type, resourceType, resourceId]) => ({ type, resourceType, resourceId })),
    };
  } catch {
    return null;
  }
}
