import type { Kysely, Migration } from 'kysely';

/**
 * Why a business takes no writes for now, as its 409 says it (src/write/clock.ts): a sandbox being
 * reset, or deleted (its clock row stays, closed, so that a write with a key still cached on an
 * instance is refused rather than half-made). Null: open. A column only: an earlier release ignores
 * it, and writes to a closing sandbox through such an instance are not refused.
 */
export const closedWriteClocks: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('write_clocks').addColumn('closed', 'text').execute();
  },
};
