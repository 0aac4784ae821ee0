import type { Timestamp, NullableTimestamp, Json, Numeric, NullableNumeric } from '../db/columns.ts';

export interface ItemTable {
  id: string;
  business_id: string;
  name: string;
  handle: string;
  description: string | null;
  img_url: string | null;
  custom_type: string | null;
  brand: string | null;
  vendor_name: string | null;
  type: string;
  status: string;
  properties: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface PlatformItemTable {
  id: string;
  business_id: string;
  created_at: Timestamp;
}

export interface ItemVariantTable {
  id: string;
  business_id: string;
  item_id: string;
  variant_name: string;
  sku: string | null;
  barcode: string | null;
  currency: string;
  price: Numeric;
  cost: NullableNumeric;
  weight: NullableNumeric;
  unit_of_measure: string | null;
  sequence: number;
  properties: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}
