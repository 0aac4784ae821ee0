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

/** The audit trail (src/businesses/audit.ts): changes to keys, users and webhook endpoints, and refusals. */
export interface AuditEventTable {
  id: string;
  business_id: string;
  occurred_at: Timestamp;
  /** `api_key.created`, `user.updated`, `webhook_endpoint.deleted`, `auth.refused`, `auth.forbidden`, ... */
  kind: string;
  actor_type: string;
  actor_id: string | null;
  key_prefix: string | null;
  address: string | null;
  request_id: string | null;
  method: string | null;
  path: string | null;
  reason: string | null;
  detail: Json | null;
}

export interface BusinessCounterTable {
  business_id: string;
  name: string;
  value: number;
}
