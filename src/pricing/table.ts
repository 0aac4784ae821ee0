import type { Timestamp, NullableTimestamp, Numeric, NullableNumeric, Flag } from '../db/columns.ts';

export interface ItemListTable {
  id: string;
  business_id: string;
  label: string;
  status: string;
  is_default: Flag;
  global_price_factor: Numeric;
  global_cost_factor: Numeric;
  start_date: NullableTimestamp;
  end_date: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface ItemListEntryTable {
  id: string;
  business_id: string;
  item_list_id: string;
  item_variant_id: string;
  override_flat_price: NullableNumeric;
  currency: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}
