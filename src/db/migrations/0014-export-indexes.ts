import type { Kysely, Migration } from 'kysely';

/**
 * Exports read a business's records in id order, 500 after the last id at a time. Without an
 * index that starts (business_id, id), SQLite answered each batch from a business index and sorted
 * the whole business in a temporary b-tree: every batch cost the size of the business, and an
 * export of 1M orders did not finish in minutes. Orders and invoices grow with the business.
 */
export const exportIndexes: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('orders_business_id_idx').on('orders').columns(['business_id', 'id']).execute();
    await db.schema.createIndex('invoices_business_id_idx').on('invoices').columns(['business_id', 'id']).execute();
  },
};
