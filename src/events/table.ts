import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../db/columns.ts';

export interface EventTable {
  business_id: string;
  sequence: ColumnType<number | string, number, number>;
  id: string;
  type: string;
  resource_type: string;
  resource_id: string;
  resource_version: number;
  occurred_at: Timestamp;
  actor: Json;
  request_id: string | null;
  idempotency_key: string | null;
  /** deflate-raw of the JSON `data` (src/log/codec.ts). */
  data: ColumnType<Buffer | Uint8Array, Buffer, Buffer>;
  /** The W3C traceparent of the span that appended the event, when tracing is on (src/telemetry). */
  trace_parent: ColumnType<string | null, string | null | undefined, never>;
}
