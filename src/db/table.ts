import type { Timestamp } from './columns.ts';

/** A server instance on this database (migration 0031, src/db/instances.ts). */
export interface InstanceTable {
  id: string;
  release: string;
  started_at: Timestamp;
  seen_at: Timestamp;
}
