import type { Kysely, Migration } from 'kysely';

/**
 * Shipments changed since a time, by created_at too: a page of `GET /shipments?modifiedSince=` reads
 * the shipments created before the time and changed since from this index alone, checking
 * created_at and the cursor in the index before any row is read (src/fulfilment/shipment-repository.ts).
 * It replaces (business_id, updated_at, id), which served only the count. An index only: an
 * earlier release runs beside it unchanged.
 */
export const shipmentsChangedByCreated: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createIndex('shipments_business_updated_created_idx')
      .on('shipments')
      .columns(['business_id', 'updated_at', 'created_at', 'id'])
      .execute();
    await db.schema.dropIndex('shipments_business_updated_idx').execute();
  },
};
