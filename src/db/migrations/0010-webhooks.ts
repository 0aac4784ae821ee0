import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * Webhooks (src/webhooks): endpoints, with a cursor into the event log up to which their
 * deliveries are queued; one delivery per event and endpoint (the queue, and its log); one row
 * per attempt; replays of a sequence range, queued from the log the same way.
 */
export function webhooks(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('event_types', t.json, (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        // AES-256-GCM (src/lib/secret-box.ts): the secret signs, so it is kept encrypted, not hashed.
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', t.timestamp)
        // Events up to this sequence have their deliveries queued.
        .addColumn('cursor_sequence', 'bigint', (c) => c.notNull())
        .addColumn('failing_since', t.timestamp)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .addColumn('deleted_at', t.timestamp)
        .execute();
      await db.schema.createIndex('webhook_endpoints_business_idx').on('webhook_endpoints').columns(['business_id', 'id']).execute();

      await db.schema.createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
        // Null for a test event, whose body is kept in `payload`.
        .addColumn('sequence', 'bigint')
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        // `resource_type:resource_id`: one resource's deliveries go one at a time, in sequence order.
        .addColumn('resource_key', 'text', (c) => c.notNull())
        .addColumn('payload', 'text')
        .addColumn('replay', t.flag, (c) => c.notNull())
        // queued (behind an earlier delivery of its resource), pending, delivering, succeeded, failed, cancelled.
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        // When it is next due: its next attempt (pending), or when its lease ends (delivering).
        .addColumn('due_at', t.timestamp, (c) => c.notNull())
        .addColumn('lease_token', 'text')
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('finished_at', t.timestamp)
        .execute();
      await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'due_at']).execute();
      await db.schema.createIndex('webhook_deliveries_resource_idx').on('webhook_deliveries')
        .columns(['endpoint_id', 'resource_key', 'status', 'sequence']).execute();
      await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_finished_idx').on('webhook_deliveries').column('finished_at').execute();

      await db.schema.createTable('webhook_attempts')
        .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('attempted_at', t.timestamp, (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('response_body', 'text')
        .addColumn('error', 'text')
        .addColumn('next_attempt_at', t.timestamp)
        .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
        .execute();

      await db.schema.createTable('webhook_replays')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
        .addColumn('after_sequence', 'bigint', (c) => c.notNull())
        .addColumn('until_sequence', 'bigint', (c) => c.notNull())
        .addColumn('cursor_sequence', 'bigint', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('finished_at', t.timestamp)
        .execute();
      await db.schema.createIndex('webhook_replays_open_idx').on('webhook_replays').columns(['finished_at', 'endpoint_id']).execute();
    },
  };
}
