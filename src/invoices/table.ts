import type { Timestamp, NullableTimestamp, Json, Numeric } from '../db/columns.ts';

export interface InvoiceTable {
  id: string;
  business_id: string;
  partnership_id: string;
  order_id: string;
  shipment_id: string | null;
  invoice_number: string;
  status: string;
  reference: string | null;
  notes: string | null;
  due_at: NullableTimestamp;
  currency: string;
  total_amount: Numeric;
  properties: Json;
  version: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface InvoiceLineItemTable {
  id: string;
  business_id: string;
  invoice_id: string;
  order_item_id: string;
  item_variant_id: string;
  description: string;
  quantity: Numeric;
  unit_amount: Numeric;
  line_amount: Numeric;
  currency: string;
  line_number: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}
