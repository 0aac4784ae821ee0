import type { NullableTimestamp, Timestamp } from '../db/columns.ts';

export type Role = 'owner' | 'admin' | 'viewer';

export interface UserTable {
  id: string;
  business_id: string;
  email: string;
  name: string;
  role: Role;
  password_hash: string;
  status: 'active' | 'disabled';
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionTable {
  id_hash: string;
  user_id: string;
  business_id: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}
