import type { ColumnType } from 'kysely';
/**
 * Live orders whose `updated_at` falls on a UTC day (`YYYY-MM-DD`), per the UTC day of their
 * `created_at`, for changed-since totals and pages.
 */
export interface OrderChangeCountTable {
  business_id: string;
  day: string;
  created_day: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

/** Live orders per business, phase and status: maintained in every order write's transaction. */
export interface OrderCountTable {
  business_id: string;
  phase: string;
  status: string;
  /** Concurrent writers add to different rows (src/db/dialect.ts countShard); a count is the sum. */
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

/** One row per property path of a live order (src/orders/read-model/properties.ts); the same for soft-deleted ones in `order_deleted_properties`. */
export interface OrderPropertyTable {
  business_id: string;
  order_id: string;
  path: string;
  value: string | null;
}

/**
 * Live orders per business, property path, UTC day of createdAt (`YYYY-MM-DD`), phase and status;
 * soft-deleted ones in `order_deleted_property_counts`.
 */
export interface OrderPropertyCountTable {
  business_id: string;
  path: string;
  day: string;
  phase: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

/**
 * Live orders created on a UTC day (`YYYY-MM-DD`), per phase and status, for deep pages; the same
 * shape for soft-deleted orders (`order_deleted_counts`), for lists with includeDeleted.
 */
export interface OrderCreatedCountTable {
  business_id: string;
  day: string;
  phase: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}
