import type { Kysely, Migration } from 'kysely';

/**
 * Sandboxes (src/sandbox, docs/decisions/0062-sandboxes.md): a business whose `live_business_id`
 * names the live business it belongs to; null for a live business, as every existing one is.
 * A nullable column and an index only: an earlier release ignores them.
 */
export const sandboxes: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('businesses').addColumn('live_business_id', 'text').execute();
    await db.schema.createIndex('businesses_live_business_idx').on('businesses').column('live_business_id').execute();
  },
};
