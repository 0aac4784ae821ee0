import type { Kysely, Migration } from 'kysely';
import { columnTypes } from '../dialect.ts';
import type { Dialect } from '../types.ts';

/**
 * The supplier console (src/console): its users and their sessions; API keys get a name, who
 * made them, and an optional expiry (rotation with a grace period sets it on the old key).
 */
export function console(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('api_keys').addColumn('name', 'text').execute();
      await db.schema.alterTable('api_keys').addColumn('created_by', t.json).execute();
      await db.schema.alterTable('api_keys').addColumn('expires_at', t.timestamp).execute();

      await db.schema.createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('business_id', 'text', (c) => c.notNull().references('businesses.id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        // scrypt (N=2^17, r=8, p=1) with a salt of its own: `scrypt$17$8$1$<salt>$<hash>`.
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('updated_at', t.timestamp, (c) => c.notNull())
        .execute();
      // Sign-in is by email, so an email names one user across businesses.
      await db.schema.createIndex('users_email_idx').on('users').column('email').unique().execute();

      await db.schema.createTable('sessions')
        // SHA-256 of the cookie's 32 random bytes: the cookie itself is never stored.
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
        .addColumn('business_id', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('last_seen_at', t.timestamp, (c) => c.notNull())
        .addColumn('expires_at', t.timestamp, (c) => c.notNull())
        .addColumn('revoked_at', t.timestamp)
        .execute();
      await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
    },
  };
}
