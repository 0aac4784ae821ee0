import type { Selectable } from 'kysely';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { WebhookEndpoint } from './schema.ts';
import type { WebhookAttemptTable, WebhookDeliveryTable, WebhookEndpointTable } from './table.ts';

export function toEndpoint(row: Selectable<WebhookEndpointTable>, now: string): WebhookEndpoint {
  const graceEnds = toIso(row.previous_secret_expires_at);
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: readJson<string[]>(row.event_types) ?? [],
    status: row.status,
    previousSecretExpiresAt: row.previous_secret !== null && graceEnds !== null && graceEnds > now ? graceEnds : null,
    failingSince: toIso(row.failing_since),
    lastSequence: Number(row.cursor_sequence),
    hidesMargin: Boolean(row.hides_margin),
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
  };
}

export function toDelivery(row: Selectable<WebhookDeliveryTable>, attempts: Selectable<WebhookAttemptTable>[]) {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    sequence: row.sequence === null ? null : Number(row.sequence),
    replay: Boolean(row.replay),
    status: row.status,
    attemptCount: row.attempts,
    nextAttemptAt: row.status === 'pending' ? toIso(row.due_at) : null,
    createdAt: toIso(row.created_at)!,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      attemptedAt: toIso(a.attempted_at)!,
      responseStatus: a.response_status,
      latencyMs: a.latency_ms,
      responseBody: a.response_body,
      error: a.error,
      nextAttemptAt: toIso(a.next_attempt_at),
    })),
  };
}
