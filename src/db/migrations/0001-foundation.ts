import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

export function foundation(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('businesses')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema.createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('last_used_at', t.timestamp)
        .addColumn('revoked_at', t.timestamp)
        .execute();
      await db.schema.createIndex('api_keys_business_idx').on('api_keys').columns(['business_id']).execute();

      await db.schema.createTable('items')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('handle', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('img_url', 'text')
        .addColumn('custom_type', 'text')
        .addColumn('brand', 'text')
        .addColumn('vendor_name', 'text')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('properties', t.json)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      await db.schema.createIndex('items_live_handle_uq').on('items').columns(['business_id', 'handle'])
        .unique().where(sql.ref('deleted_at'), 'is', null).execute();
      await db.schema.createIndex('items_business_created_idx').on('items')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      await db.schema.createIndex('items_business_updated_idx').on('items')
        .columns(['business_id', 'updated_at']).execute();

      await db.schema.createTable('platform_items')
        .addColumn('id', 'text', (c) => c.primaryKey().references('items.id'))
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema.createTable('item_variants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('item_id', 'text', (c) => c.notNull().references('items.id'))
        .addColumn('variant_name', 'text', (c) => c.notNull())
        .addColumn('sku', 'text')
        .addColumn('barcode', 'text')
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('price', t.numeric, (c) => c.notNull())
        .addColumn('cost', t.numeric)
        .addColumn('weight', t.numeric)
        .addColumn('unit_of_measure', 'text')
        .addColumn('sequence', 'integer', (c) => c.notNull())
        .addColumn('properties', t.json)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      await db.schema.createIndex('item_variants_item_idx').on('item_variants').columns(['item_id', 'sequence']).execute();

      await db.schema.createTable('item_lists')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('is_default', t.flag, (c) => c.notNull())
        .addColumn('global_price_factor', t.numeric, (c) => c.notNull())
        .addColumn('global_cost_factor', t.numeric, (c) => c.notNull())
        .addColumn('start_date', t.timestamp)
        .addColumn('end_date', t.timestamp)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      await db.schema.createIndex('item_lists_business_created_idx').on('item_lists')
        .columns(['business_id', 'created_at desc', 'id desc']).execute();
      // Exactly one default list per business, enforced by the database rather than by care.
      await db.schema.createIndex('item_lists_default_uq').on('item_lists').columns(['business_id'])
        .unique().where(sql.ref('is_default'), '=', dialect === 'postgres' ? sql.lit(true) : sql.lit(1)).execute();

      await db.schema.createTable('item_list_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('item_list_id', 'text', (c) => c.notNull().references('item_lists.id'))
        .addColumn('item_variant_id', 'text', (c) => c.notNull().references('item_variants.id'))
        .addColumn('override_flat_price', t.numeric)
        .addColumn('currency', 'text')
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addUniqueConstraint('item_list_entries_list_variant_uq', ['item_list_id', 'item_variant_id'])
        .execute();
      await db.schema.createIndex('item_list_entries_variant_idx').on('item_list_entries').columns(['item_variant_id']).execute();

      await db.schema.createTable('idempotency_keys')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('response_status', 'integer', (c) => c.notNull())
        .addColumn('response_headers', t.json)
        .addColumn('response_body', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('expires_at', t.timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['business_id', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').columns(['expires_at']).execute();
    },
  };
}
