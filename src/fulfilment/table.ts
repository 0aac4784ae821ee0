import type { ColumnType } from 'kysely';
import type { Json, NullableTimestamp, Timestamp } from '../db/columns.ts';

export interface AcknowledgementTable {
  id: string;
  business_id: string;
  order_id: string;
  decision: string;
  phase: string | null;
  notes: string | null;
  lines: Json;
  decided_at: Timestamp;
  created_at: Timestamp;
}

export interface ShipmentTable {
  id: string;
  business_id: string;
  order_id: string;
  status: string;
  shipped_at: Timestamp;
  delivered_at: NullableTimestamp;
  expected_delivery_at: NullableTimestamp;
  carrier: Json;
  service: string | null;
  tracking_numbers: Json;
  external_reference: string | null;
  properties: Json;
  packages: Json;
  lines: Json;
  version: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  voided_at: NullableTimestamp;
}

/** Shipments per status (migration 0045); concurrent writers add to different shards, a count is the sum. */
export interface ShipmentCountTable {
  business_id: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

/** Shipments per UTC day of updatedAt, day of createdAt and status (migration 0045). */
export interface ShipmentChangeCountTable {
  business_id: string;
  day: string;
  created_day: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}
