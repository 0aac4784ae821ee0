import type { Selectable } from 'kysely';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { ContactRows, EmailRow, LocationRow, PhoneRow } from './contact-repository.ts';
import type { Buyer } from './schema.ts';
import type { PhantomTable } from './table.ts';

export type BuyerRow = Selectable<PhantomTable> & {
  partnership_id: string;
  partnership_status: string;
  item_list_id: string | null;
};

const toEmail = (r: EmailRow) => ({
  id: r.id,
  email: r.email,
  contactName: r.contact_name,
  isPrimary: Boolean(r.is_primary),
  isVerified: Boolean(r.is_verified),
  verifiedAt: toIso(r.verified_at),
  sequence: r.sequence,
});
const toPhone = (r: PhoneRow) => ({
  id: r.id,
  phone: r.phone,
  contactName: r.contact_name,
  isPrimary: Boolean(r.is_primary),
  isVerified: Boolean(r.is_verified),
  verifiedAt: toIso(r.verified_at),
  sequence: r.sequence,
});
const toLocation = (r: LocationRow) => ({
  id: r.id,
  label: r.label,
  type: r.type,
  status: r.status,
  addressLine1: r.address_line1,
  addressLine2: r.address_line2,
  city: r.city,
  state: r.state,
  postcode: r.postcode,
  country: r.country,
  sequence: r.sequence,
});

export function toBuyer(row: BuyerRow, contacts: ContactRows): Buyer {
  return {
    id: row.id,
    name: row.name,
    legalName: row.legal_name,
    primaryEmail: row.primary_email,
    primaryPhone: row.primary_phone,
    status: row.status,
    partnershipId: row.partnership_id,
    partnershipStatus: row.partnership_status as Buyer['partnershipStatus'],
    itemListId: row.item_list_id,
    buyerInfo: readJson(row.buyer_info),
    properties: readJson(row.properties),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    deletedAt: toIso(row.deleted_at),
    emails: contacts.emails.map(toEmail),
    phones: contacts.phones.map(toPhone),
    locations: contacts.locations.map(toLocation),
  };
}
