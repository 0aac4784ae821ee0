import type { Selectable } from 'kysely';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { Event } from './schema.ts';
import type { EventTable } from './table.ts';
import { decodeData, decodeDataBytes, decodeDataText } from '../log/codec.ts';

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** The event's JSON up to `"data":`, in `toEvent`'s field order. */
function eventHead(row: Selectable<EventTable>, livemode: boolean): string {
  return (
    `{"id":${JSON.stringify(row.id)},"sequence":${Number(row.sequence)},"type":${JSON.stringify(row.type)},` +
    `"resourceType":${JSON.stringify(row.resource_type)},"resourceId":${JSON.stringify(row.resource_id)},` +
    `"resourceVersion":${row.resource_version},"occurredAt":${JSON.stringify(toIso(row.occurred_at))},` +
    `"actor":${text(row.actor)},"requestId":${JSON.stringify(row.request_id)},"idempotencyKey":${JSON.stringify(row.idempotency_key)},` +
    `"livemode":${livemode},"data":`
  );
}

/**
 * An event's JSON from the stored row without parsing its data (already JSON), so a feed page is
 * text assembled rather than objects rebuilt. Same fields and order as `toEvent`.
 */
export const eventJson = (row: Selectable<EventTable>, livemode: boolean): string =>
  `${eventHead(row, livemode)}${decodeDataText(row.data)}}`;

const CLOSE = Buffer.from('}');

/** The same JSON as byte parts: the data stays the bytes it inflates to. */
export const eventJsonParts = (row: Selectable<EventTable>, livemode: boolean): Buffer[] => [
  Buffer.from(eventHead(row, livemode)),
  decodeDataBytes(row.data),
  CLOSE,
];

/** `livemode`: false for a sandbox's events (src/sandbox). */
export function toEvent(row: Selectable<EventTable>, livemode: boolean): Event {
  return {
    id: row.id,
    sequence: Number(row.sequence),
    type: row.type,
    resourceType: row.resource_type as Event['resourceType'],
    resourceId: row.resource_id,
    resourceVersion: row.resource_version,
    occurredAt: toIso(row.occurred_at)!,
    actor: readJson<Event['actor']>(row.actor)!,
    requestId: row.request_id,
    idempotencyKey: row.idempotency_key,
    livemode,
    data: decodeData(row.data) as Event['data'],
  };
}
