import type { Kysely, Migration } from 'kysely';

/**
 * Each API key's scopes (src/businesses/scopes.ts), as a JSON array of `area:level`. Null, as every
 * existing key has it, means every scope. A column only: an earlier release ignores it.
 */
export const apiKeyScopes: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
  },
};
