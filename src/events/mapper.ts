import type { Selectable } from 'kysely';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { Event } from './schema.ts';
import type { EventTable } from './table.ts';
import { decodeData } from './codec.ts';

export function toEvent(row: Selectable<EventTable>): Event {
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
    data: decodeData(row.data) as Event['data'],
  };
}
