import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * Restricted keys, the rest (docs/decisions/0043-restricted-keys.md):
 * - `webhook_endpoints.hides_margin`: the endpoint was made or changed by a key without
 *   `margin:read`, so its deliveries leave out cost fields;
 * - `api_keys.allowed_cidrs`: the addresses a key may be used from, as a JSON array (null: any);
 * - `audit_events`: who changed keys, users and webhook endpoints, and every refused request.
 * Columns with defaults and a new table only: an earlier release runs beside them unchanged.
 */
export function restrictedKeys(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  const no = dialect === 'postgres' ? sql`false` : sql`0`;
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('webhook_endpoints').addColumn('hides_margin', t.flag, (c) => c.notNull().defaultTo(no)).execute();
      await db.schema.alterTable('api_keys').addColumn('allowed_cidrs', 'text').execute();
      await db.schema.createTable('audit_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('actor_type', 'text', (c) => c.notNull())
        .addColumn('actor_id', 'text')
        .addColumn('key_prefix', 'text')
        .addColumn('address', 'text')
        .addColumn('request_id', 'text')
        .addColumn('method', 'text')
        .addColumn('path', 'text')
        .addColumn('reason', 'text')
        .addColumn('subject_id', 'text')
        .addColumn('detail', t.json)
        .execute();
      await db.schema.createIndex('audit_events_business_time').on('audit_events').columns(['business_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('audit_events_time').on('audit_events').column('created_at').execute();
    },
  };
}
