import type { Kysely, Migration } from 'kysely';

/**
 * Each business's write clock (src/write/clock.ts): the time of its last write, in milliseconds
 * since the epoch. Every write takes its business's row first, which orders the business's writes,
 * and reads its time there, so that a write's `updatedAt` is later than that of every write of the
 * business that committed before it. A table of its own: business_counters.value is an `integer`
 * on PostgreSQL, too small for milliseconds.
 */
export const writeClocks: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createTable('write_clocks')
      // No foreign key: the write that creates a business takes its clock before the business exists.
      .addColumn('business_id', 'text', (c) => c.primaryKey())
      .addColumn('last_ms', 'bigint', (c) => c.notNull())
      .execute();
  },
};
