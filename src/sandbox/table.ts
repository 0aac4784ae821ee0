import type { Json, NullableTimestamp, Timestamp } from '../db/columns.ts';

export interface SimulationRunTable {
  id: string;
  business_id: string;
  /** RUNNING, STOPPED (asked to), FINISHED (its orders all made) or FAILED (`error` says why). */
  state: string;
  interval_ms: number;
  /** Orders to make; null: until stopped. */
  total: number | null;
  created: number;
  changed: number;
  cancelled: number;
  received: number;
  next_at: Timestamp;
  /** Second thoughts to come: `[{orderId, at, kind}]`, `at` the count of orders made after which it comes. */
  pending: Json;
  /** `{type, id, name}`. */
  started_by: Json;
  error: string | null;
  lease_owner: string | null;
  lease_until: NullableTimestamp;
  created_at: Timestamp;
  ended_at: NullableTimestamp;
}

export interface SimulationOrderTable {
  business_id: string;
  run_id: string;
  order_id: string;
  created_at: Timestamp;
}
