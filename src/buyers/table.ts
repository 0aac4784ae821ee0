import type { Timestamp, NullableTimestamp, Json, Flag } from '../db/columns.ts';

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

export interface PhantomContactColumns {
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
