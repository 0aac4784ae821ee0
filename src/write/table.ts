import type { Timestamp, Json } from '../db/columns.ts';

export interface IdempotencyKeyTable {
  business_id: string;
  key: string;
  fingerprint: string;
  response_status: number;
  response_headers: Json;
  response_body: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface WriteClockTable {
  business_id: string;
  /** Milliseconds since the epoch; PostgreSQL answers a bigint as text. */
  last_ms: number | string;
  /** Why the business takes no writes for now, as its 409 says it (src/write/clock.ts); null: open. */
  closed: string | null;
}
