import type { Kysely, Migration } from 'kysely';

/**
 * The key that replaced a rotated API key (src/businesses/service.ts `rotateApiKey`): a key is
 * rotated once, and rotating it again in its grace is refused, naming the successor. A column
 * only: an earlier release ignores it.
 */
export const keySuccessors: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('api_keys').addColumn('rotated_to', 'text').execute();
  },
};
