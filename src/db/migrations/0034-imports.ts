import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * Bulk imports (src/imports, docs/decisions/0044-bulk-import.md):
 * - `imports`: one row per whole file received, with its options, state, progress and lease;
 * - `import_chunks`: the file itself, as runs of whole lines, so that any instance can resume it;
 * - `import_results`: one row per line done, with its outcome, record and errors, and its `ref`.
 * New tables only: an earlier release runs beside them unchanged.
 */
export function imports(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('imports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text')
        .addColumn('idempotency_key', 'text')
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('total_lines', 'integer', (c) => c.notNull())
        .addColumn('lines_done', 'integer', (c) => c.notNull())
        .addColumn('counts', 'text', (c) => c.notNull())
        .addColumn('started_at', t.timestamp)
        .addColumn('finished_at', t.timestamp)
        .addColumn('lease_owner', 'text')
        .addColumn('lease_until', t.timestamp)
        .execute();
      await db.schema.createIndex('imports_business_time').on('imports').columns(['business_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('imports_idempotency_key').on('imports').columns(['business_id', 'idempotency_key']).unique().execute();
      await db.schema.createIndex('imports_state').on('imports').columns(['state', 'created_at']).execute();
      await db.schema.createTable('import_chunks')
        .addColumn('import_id', 'text', (c) => c.notNull())
        .addColumn('first_line', 'integer', (c) => c.notNull())
        .addColumn('line_count', 'integer', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('data', t.bytes, (c) => c.notNull())
        .addPrimaryKeyConstraint('import_chunks_pk', ['import_id', 'first_line'])
        .execute();
      await db.schema.createTable('import_results')
        .addColumn('import_id', 'text', (c) => c.notNull())
        .addColumn('line', 'integer', (c) => c.notNull())
        .addColumn('ref', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('record_id', 'text')
        .addColumn('detail', 'text')
        .addPrimaryKeyConstraint('import_results_pk', ['import_id', 'line'])
        .execute();
      await db.schema.createIndex('import_results_ref').on('import_results').columns(['import_id', 'ref']).execute();
    },
  };
}
