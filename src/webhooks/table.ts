import type { ColumnType } from 'kysely';
import type { Flag, Json, NullableTimestamp, Timestamp } from '../db/columns.ts';

type Sequence = ColumnType<number | string, number, number>;

export interface WebhookEndpointTable {
  id: string;
  business_id: string;
  url: string;
  description: string | null;
  /** JSON array of types and `order.*` wildcards; empty means every type. */
  event_types: Json;
  status: 'enabled' | 'paused' | 'disabled';
  /** Sealed with the SecretBox (src/lib/secret-box.ts). */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: NullableTimestamp;
  cursor_sequence: Sequence;
  failing_since: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
  /** Made or changed by a key without margin:read: deliveries leave out cost fields. */
  hides_margin: Flag;
}

export type DeliveryStatus = 'queued' | 'pending' | 'delivering' | 'succeeded' | 'failed' | 'cancelled';

export interface WebhookDeliveryTable {
  id: string;
  business_id: string;
  endpoint_id: string;
  sequence: ColumnType<number | string | null, number | null, number | null>;
  event_id: string;
  event_type: string;
  resource_key: string;
  payload: string | null;
  replay: Flag;
  status: DeliveryStatus;
  attempts: number;
  due_at: Timestamp;
  lease_token: string | null;
  created_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface WebhookAttemptTable {
  delivery_id: string;
  attempt: number;
  attempted_at: Timestamp;
  response_status: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  next_attempt_at: NullableTimestamp;
}

export interface WebhookReplayTable {
  id: string;
  business_id: string;
  endpoint_id: string;
  after_sequence: Sequence;
  until_sequence: Sequence;
  cursor_sequence: Sequence;
  created_at: Timestamp;
  finished_at: NullableTimestamp;
}
