import type { ColumnType } from 'kysely';
import type { Timestamp, NullableTimestamp, Json, Numeric } from '../db/columns.ts';

export interface OrderTable {
  id: string;
  business_id: string;
  partnership_id: string;
  membership_id: string | null;
  integration_id: string | null;
  phase: string;
  status: string;
  internal_reference: string;
  external_reference: string | null;
  notes: string | null;
  delivery_address: string | null;
  expected_delivery_at: Timestamp;
  delivered_at: NullableTimestamp;
  shipped_at: NullableTimestamp;
  shipped_by: NullableTimestamp;
  currency: string;
  total_amount: Numeric;
  properties: Json;
  version: number;
  ingested_at: NullableTimestamp;
  /** The current acknowledgement's summary (src/fulfilment), shown in the order's JSON. */
  acknowledgement_id: string | null;
  acknowledged_at: NullableTimestamp;
  acknowledgement_summary: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface OrderItemTable {
  id: string;
  business_id: string;
  order_id: string;
  item_list_entry_id: string;
  /** What the line sold, as it was when the line was written (migration 0030): a catalogue change leaves it. */
  item_variant_id: string;
  item_id: string;
  variant_name: string;
  sku: string | null;
  line_number: number;
  quantity: Numeric;
  unit_of_measure: string;
  currency: string;
  price: Numeric;
  cost: Numeric;
  properties: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** What shipments not voided hold of the line (migration 0045; src/fulfilment/shipped-quantities.ts keeps it). */
  shipped_quantity: ColumnType<string, string | undefined, string>;
}
