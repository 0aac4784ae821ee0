import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * The server instances running on this database, each with the release it runs (the newest
 * migration it knows) and when it was last seen (src/db/instances.ts). A migration that an earlier
 * release cannot run beside refuses to run while an instance of one is seen (docs/operations.md,
 * "Upgrading"). A table only: instances of earlier releases neither know nor need it.
 */
export function instances(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('instances')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('started_at', t.timestamp, (c) => c.notNull())
        .addColumn('seen_at', t.timestamp, (c) => c.notNull())
        .execute();
    },
  };
}
