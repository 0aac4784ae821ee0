import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Each order line records the variant it sold, as it was when the line was written: the variant's
 * id, its item's id, its name and its SKU (docs/decisions/0005). Before, a line showed the
 * variant's current name and SKU through a join, so renaming a variant changed every order that
 * sold it without a new version or an event.
 *
 * Existing lines are filled from their entries' variants as they are now: the closest record there
 * is of what they sold. On PostgreSQL the columns are then made NOT NULL (sku stays nullable);
 * SQLite cannot add that constraint to an existing column without rebuilding the table, and every
 * insert of this release writes them.
 */
export function orderLinesRecordVariants(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const column of ['item_variant_id', 'item_id', 'variant_name', 'sku']) {
        await db.schema.alterTable('order_items').addColumn(column, 'text').execute();
      }
      await sql`update order_items set
          item_variant_id = item_variants.id, item_id = item_variants.item_id,
          variant_name = item_variants.variant_name, sku = item_variants.sku
        from item_list_entries join item_variants on item_variants.id = item_list_entries.item_variant_id
        where item_list_entries.id = order_items.item_list_entry_id`.execute(db);
      if (dialect === 'postgres') {
        for (const column of ['item_variant_id', 'item_id', 'variant_name']) {
          await sql`alter table order_items alter column ${sql.ref(column)} set not null`.execute(db);
        }
      }
    },
  };
}
