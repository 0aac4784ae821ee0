import { ITEM_COLUMNS } from '../items/repository.ts';
import { VARIANT_COLUMNS } from '../items/variant-repository.ts';
import type { Db } from '../db/types.ts';
import { insertRows } from '../db/bulk.ts';
import { idAt, unitsToDecimal, type Random } from './random.ts';

const ADJECTIVES = [
  'Blue',
  'Red',
  'Organic',
  'Classic',
  'Heavy Duty',
  'Premium',
  'Eco',
  'Compact',
  'Deluxe',
  'Rustic',
  'Smoked',
  'Golden',
];
const NOUNS = [
  'Widget',
  'Coffee Beans',
  'Olive Oil',
  'Tea Towel',
  'Sourdough',
  'Pallet Wrap',
  'Cable Tie',
  'Honey',
  'Notebook',
  'Gloves',
  'Cheddar',
  'Granola',
];
const SIZES = [
  ['Small', 'Medium', 'Large', 'XL'],
  ['250 g', '500 g', '1 kg', '5 kg'],
  ['Single', 'Pack of 6', 'Case of 24', 'Pallet'],
];
const TYPES = ['FOOD', 'BEVERAGE', 'SUPPLIES', 'OTHER'];
const COMPANY = [
  'Harbour',
  'Summit',
  'Greenfield',
  'Bluegum',
  'Ironbark',
  'Coastal',
  'Northside',
  'Wattle',
  'Redgum',
  'Southern Cross',
];
const TRADE = ['Cafe', 'Grocers', 'Provisions', 'Trading Co', 'Kitchen', 'Hospitality Group', 'Markets', 'Deli'];
const STREETS = ['George St', 'King St', 'Queen St', 'Station Rd', 'Harbour Rd', 'Church St', 'High St'];
const CITIES = [
  ['Sydney', 'NSW', '2000'],
  ['Melbourne', 'VIC', '3000'],
  ['Brisbane', 'QLD', '4000'],
  ['Perth', 'WA', '6000'],
  ['Adelaide', 'SA', '5000'],
];
const FIRST = ['Alex', 'Sam', 'Priya', 'Jordan', 'Mei', 'Tom', 'Aisha', 'Lucas', 'Grace', 'Noah'];

export interface Variant {
  id: string;
  itemId: string;
  variantName: string;
  defaultEntryId: string;
  priceUnits: number;
  costUnits: number | null;
  unitOfMeasure: string | null;
  sku: string;
}
/** What one buyer pays for one variant. */
export interface MenuEntry {
  entryId: string;
  priceUnits: number;
  costUnits: number;
  unitOfMeasure: string;
  variant: Variant;
}
export interface Buyer {
  partnershipId: string;
  phantomId: string;
  address: string;
  menu: MenuEntry[];
}

export const CURRENCY = 'AUD';

export async function insertCatalogue(
  db: Db,
  businessId: string,
  defaultListId: string,
  itemCount: number,
  rnd: Random,
  ms: number,
): Promise<Variant[]> {
  const now = new Date(ms).toISOString();
  const items: unknown[][] = [];
  const platform: unknown[][] = [];
  const variantRows: unknown[][] = [];
  const entries: unknown[][] = [];
  const variants: Variant[] = [];
  for (let i = 0; i < itemCount; i++) {
    const id = idAt('itm', ms);
    const name = `${rnd.pick(ADJECTIVES)} ${rnd.pick(NOUNS)}`;
    const handle = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${i + 1}`;
    const properties = rnd.chance(0.5)
      ? JSON.stringify({
          category: rnd.pick(['pantry', 'chilled', 'packaging', 'cleaning']),
          shopify: { productId: 7_000_000 + i },
        })
      : null;
    items.push([
      id,
      businessId,
      name,
      handle,
      `${name}, supplied by the case.`,
      null,
      null,
      rnd.pick(['Acme', 'Bluegum', null]),
      null,
      rnd.pick(TYPES),
      'ACTIVE',
      properties,
      now,
      now,
    ]);
    platform.push([id, businessId, now]);
    const sizes = rnd.pick(SIZES);
    const count = rnd.weighted([
      [1, 4],
      [2, 3],
      [3, 2],
      [4, 2],
    ] as const);
    const base = rnd.int(2, 400) * 10 * 100; // 0.20 to 40.00 in whole ten cents
    for (let v = 0; v < count; v++) {
      const variant: Variant = {
        id: idAt('var', ms),
        itemId: id,
        variantName: count === 1 ? 'Default' : sizes[v],
        defaultEntryId: idAt('ile', ms),
        priceUnits: base * (v + 1),
        costUnits: rnd.chance(0.9) ? Math.round((base * (v + 1) * rnd.int(40, 70)) / 100 / 100) * 100 : null,
        unitOfMeasure: rnd.weighted([
          ['EA', 6],
          ['KG', 1],
          ['CASE', 2],
          [null, 1],
        ] as const),
        sku: `SKU-${String(i + 1).padStart(5, '0')}-${v + 1}`,
      };
      variants.push(variant);
      variantRows.push([
        variant.id,
        businessId,
        id,
        variant.variantName,
        variant.sku,
        rnd.chance(0.5) ? String(9_300_000_000_000 + i * 10 + v) : null,
        CURRENCY,
        unitsToDecimal(variant.priceUnits),
        variant.costUnits === null ? null : unitsToDecimal(variant.costUnits),
        null,
        variant.unitOfMeasure,
        v + 1,
        null,
        now,
        now,
      ]);
      entries.push([variant.defaultEntryId, businessId, defaultListId, variant.id, null, null, now, now]);
    }
  }
  await insertRows(db, 'items', ITEM_COLUMNS, items);
  await insertRows(db, 'platform_items', ['id', 'business_id', 'created_at'], platform);
  await insertRows(db, 'item_variants', VARIANT_COLUMNS, variantRows);
  await insertRows(
    db,
    'item_list_entries',
    [
      'id',
      'business_id',
      'item_list_id',
      'item_variant_id',
      'override_flat_price',
      'currency',
      'created_at',
      'updated_at',
    ],
    entries,
  );
  return variants;
}

interface PriceList {
  label: string;
  pricePercent: number;
  share: number;
  override: boolean;
  applies: boolean;
  assignShare: number;
}
const LISTS: PriceList[] = [
  { label: 'Wholesale', pricePercent: 90, share: 0.7, override: false, applies: true, assignShare: 0.25 },
  { label: 'Key accounts', pricePercent: 100, share: 0.4, override: true, applies: true, assignShare: 0.15 },
  // Ended last season: assigned buyers fall back to the default list, as the pricing rules say.
  { label: 'Last season promotion', pricePercent: 75, share: 0.2, override: false, applies: false, assignShare: 0.1 },
];

/** Buyers with contacts and partnerships, and a few price lists assigned to some of them. */
export async function insertBuyers(
  db: Db,
  businessId: string,
  defaultListId: string,
  variants: Variant[],
  buyerCount: number,
  rnd: Random,
  ms: number,
): Promise<Buyer[]> {
  const now = new Date(ms).toISOString();
  const defaultMenu: MenuEntry[] = variants.map((v) => ({
    entryId: v.defaultEntryId,
    priceUnits: v.priceUnits,
    costUnits: v.costUnits ?? 0,
    unitOfMeasure: v.unitOfMeasure ?? 'EA',
    variant: v,
  }));
  const lists: unknown[][] = [];
  const listEntries: unknown[][] = [];
  const menus: Array<{ listId: string; menu: MenuEntry[] }> = [];
  for (const list of LISTS) {
    const listId = idAt('list', ms);
    const year = new Date(ms).getUTCFullYear();
    lists.push([
      listId,
      businessId,
      list.label,
      'ACTIVE',
      0,
      String(list.pricePercent / 100),
      '1',
      list.applies ? null : `${year - 1}-10-01T00:00:00.000Z`,
      list.applies ? null : `${year - 1}-12-31T23:59:59.999Z`,
      now,
      now,
    ]);
    const menu = defaultMenu.slice();
    variants.forEach((v, i) => {
      if (!rnd.chance(list.share)) return;
      const entryId = idAt('ile', ms);
      const override = list.override ? Math.round((v.priceUnits * rnd.int(75, 95)) / 100 / 100) * 100 : null;
      listEntries.push([
        entryId,
        businessId,
        listId,
        v.id,
        override === null ? null : unitsToDecimal(override),
        null,
        now,
        now,
      ]);
      if (list.applies) {
        menu[i] = {
          entryId,
          priceUnits: override ?? (v.priceUnits * list.pricePercent) / 100,
          costUnits: v.costUnits ?? 0,
          unitOfMeasure: v.unitOfMeasure ?? 'EA',
          variant: v,
        };
      }
    });
    menus.push({ listId, menu });
  }
  await insertRows(
    db,
    'item_lists',
    [
      'id',
      'business_id',
      'label',
      'status',
      'is_default',
      'global_price_factor',
      'global_cost_factor',
      'start_date',
      'end_date',
      'created_at',
      'updated_at',
    ],
    lists,
  );
  await insertRows(
    db,
    'item_list_entries',
    [
      'id',
      'business_id',
      'item_list_id',
      'item_variant_id',
      'override_flat_price',
      'currency',
      'created_at',
      'updated_at',
    ],
    listEntries,
  );

  const phantoms: unknown[][] = [];
  const phantomBuyers: unknown[][] = [];
  const partnerships: unknown[][] = [];
  const emails: unknown[][] = [];
  const phones: unknown[][] = [];
  const locations: unknown[][] = [];
  const buyers: Buyer[] = [];
  for (let b = 0; b < buyerCount; b++) {
    const phantomId = idAt('phm', ms);
    const name = `${rnd.pick(COMPANY)} ${rnd.pick(TRADE)}${b >= COMPANY.length * TRADE.length ? ` ${b + 1}` : ''}`;
    const domain = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '')}${b + 1}.example`;
    const contacts = rnd.int(1, 2);
    const primaryEmail = `orders@${domain}`;
    const primaryPhone = `+61 2 9${String(rnd.int(0, 9_999_999)).padStart(7, '0')}`;
    for (let c = 0; c < contacts; c++) {
      emails.push([
        idAt('eml', ms),
        businessId,
        phantomId,
        c + 1,
        now,
        now,
        c === 0 ? primaryEmail : `${rnd.pick(FIRST).toLowerCase()}@${domain}`,
        c === 0 ? 'Orders desk' : rnd.pick(FIRST),
        c === 0 ? 1 : 0,
        0,
        null,
      ]);
    }
    phones.push([idAt('phn', ms), businessId, phantomId, 1, now, now, primaryPhone, rnd.pick(FIRST), 1, 0, null]);
    const [city, state, postcode] = rnd.pick(CITIES);
    const street = `${rnd.int(1, 400)} ${rnd.pick(STREETS)}`;
    locations.push([
      idAt('loc', ms),
      businessId,
      phantomId,
      1,
      now,
      now,
      'Main store',
      'STORE',
      'ACTIVE',
      street,
      null,
      city,
      state,
      postcode,
      'AU',
    ]);
    const properties = rnd.chance(0.5)
      ? JSON.stringify({ sage200Evo: { customerAccount: `C${String(b + 1).padStart(5, '0')}` } })
      : null;
    phantoms.push([
      phantomId,
      businessId,
      name,
      `${name} Pty Ltd`,
      primaryEmail,
      primaryPhone,
      'ACTIVE',
      JSON.stringify({ abn: String(rnd.int(10_000_000_000, 99_999_999_999)) }),
      properties,
      now,
      now,
    ]);
    phantomBuyers.push([phantomId, businessId, now]);
    let r = rnd.next();
    const chosen = LISTS.findIndex((l) => (r -= l.assignShare) < 0);
    const partnershipId = idAt('prt', ms);
    partnerships.push([
      partnershipId,
      businessId,
      phantomId,
      rnd.chance(0.9) ? 'ACTIVE' : rnd.pick(['PAUSED', 'PENDING']),
      chosen === -1 ? defaultListId : menus[chosen].listId,
      now,
      now,
    ]);
    buyers.push({
      partnershipId,
      phantomId,
      address: `${street}, ${city} ${state} ${postcode}`,
      menu: chosen === -1 ? defaultMenu : menus[chosen].menu,
    });
  }
  await insertRows(
    db,
    'phantoms',
    [
      'id',
      'business_id',
      'name',
      'legal_name',
      'primary_email',
      'primary_phone',
      'status',
      'buyer_info',
      'properties',
      'created_at',
      'updated_at',
    ],
    phantoms,
  );
  await insertRows(db, 'phantom_buyers', ['id', 'business_id', 'created_at'], phantomBuyers);
  await insertRows(
    db,
    'partnerships',
    ['id', 'business_id', 'phantom_id', 'status', 'item_list_id', 'created_at', 'updated_at'],
    partnerships,
  );
  const contact = ['id', 'business_id', 'phantom_id', 'sequence', 'created_at', 'updated_at'];
  await insertRows(
    db,
    'phantom_emails',
    [...contact, 'email', 'contact_name', 'is_primary', 'is_verified', 'verified_at'],
    emails,
  );
  await insertRows(
    db,
    'phantom_phones',
    [...contact, 'phone', 'contact_name', 'is_primary', 'is_verified', 'verified_at'],
    phones,
  );
  await insertRows(
    db,
    'phantom_locations',
    [...contact, 'label', 'type', 'status', 'address_line1', 'address_line2', 'city', 'state', 'postcode', 'country'],
    locations,
  );
  return buyers;
}
