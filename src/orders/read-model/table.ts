import type { ColumnType } from 'kysely';
/** The derived tables' rows (README.md says what each holds); days are UTC `YYYY-MM-DD`. */
export interface OrderChangeCountTable {
  business_id: string;
  day: string;
  created_day: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

export interface OrderCountTable {
  business_id: string;
  phase: string;
  status: string;
  /** Concurrent writers add to different rows (src/db/dialect.ts countShard); a count is the sum. */
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

export interface OrderPropertyTable {
  business_id: string;
  order_id: string;
  path: string;
  value: string | null;
}

export interface OrderPropertyCountTable {
  business_id: string;
  path: string;
  day: string;
  phase: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

export interface OrderCreatedCountTable {
  business_id: string;
  day: string;
  phase: string;
  status: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}
