import type { Json, Timestamp, NullableTimestamp } from '../db/columns.ts';

export interface BusinessTable {
  id: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiKeyTable {
  id: string;
  business_id: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  /** A name a person gave it (the console), null for keys made before names or by the CLI without one. */
  name: string | null;
  /** The actor that made it: `{type, id, name}`. */
  created_by: Json;
  /** Refused from this time on (a rotation's grace period, or an expiry chosen at creation). */
  expires_at: NullableTimestamp;
  /** Its scopes as a JSON array (src/businesses/scopes.ts); null: every scope. */
  scopes: string | null;
  /** The CIDRs it may be used from, as a JSON array (src/businesses/allowlist.ts); null: anywhere. */
  allowed_cidrs: string | null;
}

export interface BusinessCounterTable {
  business_id: string;
  name: string;
  value: number;
}
