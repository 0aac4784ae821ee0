import type { ColumnType, Kysely, Transaction } from 'kysely';

/** Stored as timestamptz on PostgreSQL and ISO text on SQLite; always written as ISO text. */
type Timestamp = ColumnType<Date | string, string, string>;
type NullableTimestamp = ColumnType<Date | string | null, string | null | undefined, string | null>;
/** jsonb on PostgreSQL (arrives parsed), text on SQLite; always written as JSON text. */
type Json = ColumnType<unknown, string | null | undefined, string | null>;
/** numeric on PostgreSQL, text on SQLite; both arrive as decimal text. */
type Numeric = ColumnType<string, string, string>;
type NullableNumeric = ColumnType<string | null, string | null | undefined, string | null>;
/** boolean on PostgreSQL, integer on SQLite; written as 0 or 1. */
type Flag = ColumnType<boolean | number, number, number>;

export interface BusinessTable {
  id: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiKeyTable {
  id: string;
  business_id: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

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

export interface PhantomTable {
  id: string;
  business_id: string;
  name: string;
  legal_name: string | null;
  primary_email: string | null;
  primary_phone: string | null;
  status: string;
  buyer_info: Json;
  properties: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface PhantomBuyerTable {
  id: string;
  business_id: string;
  created_at: Timestamp;
}

export interface PartnershipTable {
  id: string;
  business_id: string;
  phantom_id: string;
  status: string;
  item_list_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

interface PhantomContactColumns {
  id: string;
  business_id: string;
  phantom_id: string;
  sequence: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PhantomEmailTable extends PhantomContactColumns {
  email: string;
  contact_name: string | null;
  is_primary: Flag;
  is_verified: Flag;
  verified_at: NullableTimestamp;
}

export interface PhantomPhoneTable extends PhantomContactColumns {
  phone: string;
  contact_name: string | null;
  is_primary: Flag;
  is_verified: Flag;
  verified_at: NullableTimestamp;
}

export interface PhantomLocationTable extends PhantomContactColumns {
  label: string | null;
  type: string | null;
  status: string;
  address_line1: string;
  address_line2: string | null;
  city: string | null;
  state: string | null;
  postcode: string | null;
  country: string | null;
}

export interface IdempotencyKeyTable {
  business_id: string;
  key: string;
  fingerprint: string;
  response_status: number;
  response_headers: Json;
  response_body: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

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
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface OrderItemTable {
  id: string;
  business_id: string;
  order_id: string;
  item_list_entry_id: string;
  line_number: number;
  quantity: Numeric;
  unit_of_measure: string;
  currency: string;
  price: Numeric;
  cost: Numeric;
  properties: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface InvoiceTable {
  id: string;
  business_id: string;
  partnership_id: string;
  order_id: string;
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

export interface BusinessCounterTable {
  business_id: string;
  name: string;
  value: number;
}

/** Live orders whose `updated_at` falls on a UTC day (`YYYY-MM-DD`), for changed-since totals. */
export interface OrderChangeCountTable {
  business_id: string;
  day: string;
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

/** One row per property path of a live order (src/orders/properties-index.ts). */
export interface OrderPropertyTable {
  business_id: string;
  order_id: string;
  path: string;
  value: string | null;
}

/** Live orders per business and property path. */
export interface OrderPropertyCountTable {
  business_id: string;
  path: string;
  shard: number;
  n: ColumnType<number | string | bigint, number, number>;
}

export interface Database {
  businesses: BusinessTable;
  api_keys: ApiKeyTable;
  item_lists: ItemListTable;
  item_list_entries: ItemListEntryTable;
  items: ItemTable;
  platform_items: PlatformItemTable;
  item_variants: ItemVariantTable;
  idempotency_keys: IdempotencyKeyTable;
  phantoms: PhantomTable;
  phantom_buyers: PhantomBuyerTable;
  partnerships: PartnershipTable;
  phantom_emails: PhantomEmailTable;
  phantom_phones: PhantomPhoneTable;
  phantom_locations: PhantomLocationTable;
  orders: OrderTable;
  order_items: OrderItemTable;
  business_counters: BusinessCounterTable;
  order_counts: OrderCountTable;
  order_change_counts: OrderChangeCountTable;
  order_properties: OrderPropertyTable;
  order_property_counts: OrderPropertyCountTable;
  invoices: InvoiceTable;
  invoice_line_items: InvoiceLineItemTable;
}

/** What every repository function takes first: the database or an open transaction. */
export type Db = Kysely<Database> | Transaction<Database>;
export type Dialect = 'sqlite' | 'postgres';
