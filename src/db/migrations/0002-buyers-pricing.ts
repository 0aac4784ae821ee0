import type { CreateTableBuilder, Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/** Columns every phantom contact table shares: owner, order, verification and timestamps. */
function contactColumns(table: CreateTableBuilder<string, any>, t: ReturnType<typeof columnTypes>) {
  return table
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
    .addColumn('phantom_id', 'text', (c) => c.notNull().references('phantoms.id'))
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull());
}

export function buyersAndPricing(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('phantoms')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('legal_name', 'text')
        .addColumn('primary_email', 'text')
        .addColumn('primary_phone', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('buyer_info', t.json)
        .addColumn('properties', t.json)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      await db.schema.createIndex('phantoms_business_created_idx').on('phantoms')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      await db.schema.createIndex('phantoms_business_updated_idx').on('phantoms')
        .columns(['business_id', 'updated_at']).execute();

      await db.schema.createTable('phantom_buyers')
        .addColumn('id', 'text', (c) => c.primaryKey().references('phantoms.id'))
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema.createTable('partnerships')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('phantom_id', 'text', (c) => c.notNull().references('phantoms.id'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('item_list_id', 'text', (c) => c.references('item_lists.id'))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      // One partnership per supplier and buyer organisation.
      await db.schema.createIndex('partnerships_business_phantom_uq').on('partnerships')
        .columns(['business_id', 'phantom_id']).unique().execute();
      await db.schema.createIndex('partnerships_business_created_idx').on('partnerships')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      await db.schema.createIndex('partnerships_business_updated_idx').on('partnerships')
        .columns(['business_id', 'updated_at']).execute();
      // A price list's GET shows its partnerships.
      await db.schema.createIndex('partnerships_business_list_idx').on('partnerships')
        .columns(['business_id', 'item_list_id']).execute();

      await contactColumns(db.schema.createTable('phantom_emails'), t)
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('contact_name', 'text')
        .addColumn('is_primary', t.flag, (c) => c.notNull())
        .addColumn('is_verified', t.flag, (c) => c.notNull())
        .addColumn('verified_at', t.timestamp)
        .execute();
      await contactColumns(db.schema.createTable('phantom_phones'), t)
        .addColumn('phone', 'text', (c) => c.notNull())
        .addColumn('contact_name', 'text')
        .addColumn('is_primary', t.flag, (c) => c.notNull())
        .addColumn('is_verified', t.flag, (c) => c.notNull())
        .addColumn('verified_at', t.timestamp)
        .execute();
      await contactColumns(db.schema.createTable('phantom_locations'), t)
        .addColumn('label', 'text')
        .addColumn('type', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('address_line1', 'text', (c) => c.notNull())
        .addColumn('address_line2', 'text')
        .addColumn('city', 'text')
        .addColumn('state', 'text')
        .addColumn('postcode', 'text')
        .addColumn('country', 'text')
        .execute();
      // Contacts are only ever read per phantom (or per page of phantoms), in sequence order.
      for (const table of ['phantom_emails', 'phantom_phones', 'phantom_locations']) {
        await db.schema.createIndex(`${table}_phantom_idx`).on(table).columns(['phantom_id', 'sequence']).execute();
      }

      // Price lists are listed with updatedSince; entries by list use the (list, variant) unique index.
      await db.schema.createIndex('item_lists_business_updated_idx').on('item_lists')
        .columns(['business_id', 'updated_at']).execute();
    },
  };
}
