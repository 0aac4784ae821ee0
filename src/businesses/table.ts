import type { ColumnType } from 'kysely';
import type { Json, Timestamp, NullableTimestamp } from '../db/columns.ts';

export interface BusinessTable {
  id: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** A sandbox's live business (src/sandbox); null for a live business. */
  live_business_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ApiKeyTable {
  id: string;
  business_id: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  /** Null for keys made without a name. */
  name: string | null;
  /** `{type, id, name}`. */
  created_by: Json;
  /** Refused from this time on. */
  expires_at: NullableTimestamp;
  /** JSON array; null: every scope. */
  scopes: string | null;
  /** JSON array of CIDRs; null: anywhere. */
  allowed_cidrs: string | null;
  /** The key that replaced this one when it was rotated; null: never rotated (migration 0046). */
  rotated_to: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface BusinessCounterTable {
  business_id: string;
  name: string;
  value: number;
}
