import type { Json, Timestamp } from '../db/columns.ts';

/** The audit trail (src/audit): changes to keys, users and webhook endpoints, and refusals. */
export interface AuditEventTable {
  id: string;
  business_id: string;
  /** When it happened (named as every list's order column). */
  created_at: Timestamp;
  /** `api_key.created`, `user.updated`, `webhook_endpoint.deleted`, `request.unauthorized`, `request.forbidden`, ... */
  kind: string;
  actor_type: string;
  actor_id: string | null;
  key_prefix: string | null;
  address: string | null;
  request_id: string | null;
  method: string | null;
  path: string | null;
  reason: string | null;
  /** The key, user or endpoint a change was made to. */
  subject_id: string | null;
  detail: Json | null;
}
