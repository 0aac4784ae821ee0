import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/** The tables of small rows with a composite primary key that every write, or every list, reads by that key. */
export const WITHOUT_ROWID_TABLES = [
  'business_counters',
  'order_counts', 'order_deleted_counts', 'order_created_counts',
  'order_change_counts', 'order_deleted_change_counts',
  'order_property_counts', 'order_deleted_property_counts',
] as const;

/**
 * SQLite: the maintained counts and `business_counters` become WITHOUT ROWID tables, whose rows are
 * stored in their primary key's b-tree. As rowid tables, their key was a second b-tree beside the
 * rows: a sum over a key range (a path's orders: 8,969 rows at 1M orders) looked each row up in the
 * table by its rowid, 4.8 ms, and every upsert (a write's counts and its event counter) changed
 * both. These are the tables SQLite documents WITHOUT ROWID for: small rows, a key that is not one
 * integer. PostgreSQL has no rowid; nothing changes there.
 *
 * Each table is made again from its own definition as SQLite holds it, its rows copied, the old one
 * dropped and the new one renamed, all in one transaction (SQLite's migrations run outside one).
 * A table that is already WITHOUT ROWID is left as it is, so the migration can run again.
 */
export function countsWithoutRowid(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'sqlite') return;
      await db.transaction().execute(async (trx) => {
        for (const table of WITHOUT_ROWID_TABLES) {
          const { rows: [row] } = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = ${table}`.execute(trx);
          if (!row) throw new Error(`migration 0025: no table ${table}`);
          if (/\)\s*without\s+rowid\s*$/i.test(row.sql)) continue;
          const next = `${table}_without_rowid`;
          const head = /^create\s+table\s+("?)(\w+)\1\s*\(/i.exec(row.sql);
          // Anything else would create the table under its own name again, which reads as a start-up race.
          if (!head || head[2] !== table) throw new Error(`migration 0025: cannot read the definition of ${table}`);
          const definition = `create table "${next}" (${row.sql.slice(head[0].length)}`;
          await sql.raw(`${definition} without rowid`).execute(trx);
          await sql`insert into ${sql.table(next)} select * from ${sql.table(table)}`.execute(trx);
          await sql`drop table ${sql.table(table)}`.execute(trx);
          await sql`alter table ${sql.table(next)} rename to ${sql.table(table)}`.execute(trx);
        }
      });
    },
  };
}
