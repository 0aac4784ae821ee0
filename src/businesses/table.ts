import type { Timestamp, NullableTimestamp } from '../db/columns.ts';

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
}

export interface BusinessCounterTable {
  business_id: string;
  name: string;
  value: number;
}
