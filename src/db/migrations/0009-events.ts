import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * The event log (src/events): one row per change, appended in the write's own transaction.
 * `sequence` counts each business's events from 1 without gaps (the `event` row of
 * business_counters hands them out), so (business_id, sequence) is the key and the feed's order.
 * A resource's history reads the second index.
 */
export function events(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('events')
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('sequence', 'bigint', (c) => c.notNull())
        // evt_ ULIDs, unique by construction (80 random bits); no reader looks events up by id.
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('resource_type', 'text', (c) => c.notNull())
        .addColumn('resource_id', 'text', (c) => c.notNull())
        .addColumn('resource_version', 'integer', (c) => c.notNull())
        .addColumn('occurred_at', t.timestamp, (c) => c.notNull())
        .addColumn('actor', t.json, (c) => c.notNull())
        .addColumn('request_id', 'text')
        .addColumn('idempotency_key', 'text')
        // The event's JSON, deflated (src/events/codec.ts): a seventh of the bytes, so a busy year fits.
        .addColumn('data', t.bytes, (c) => c.notNull())
        .addPrimaryKeyConstraint('events_pk', ['business_id', 'sequence'])
        .execute();
      await db.schema.createIndex('events_resource_idx').on('events')
        .columns(['business_id', 'resource_type', 'resource_id', 'sequence']).execute();
      // Retention purges by age.
      await db.schema.createIndex('events_occurred_idx').on('events').column('occurred_at').execute();
    },
  };
}
