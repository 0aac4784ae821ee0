import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../types.ts';

/** The maintained counts that lists sum over a range of their key: per created day, per changed day, per path. */
export const COVERED_COUNT_TABLES = [
  'order_created_counts', 'order_deleted_counts',
  'order_change_counts', 'order_deleted_change_counts',
  'order_property_counts', 'order_deleted_property_counts',
] as const;

/**
 * PostgreSQL: the primary key of each day-keyed count table also holds `n` (INCLUDE), so a sum over
 * a range of the key is an index-only scan. Before, every row was fetched from the heap, where a
 * path's rows lie among every other path's and are moved by each update: at 1M orders a path's
 * 8,941 rows were spread over 1,744 pages, and its sum took 7 ms; with `n` in the key, 3 ms. This
 * is what migration 0025 did for SQLite with WITHOUT ROWID. A count's update then changes the key's
 * index as well (it is no longer a heap-only update); docs/performance.md measures that cost.
 *
 * Each key is replaced under its own name in one statement. A key that already includes `n` is left
 * as it is, so the migration can run again.
 */
export function countsCoveringKeys(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      for (const table of COVERED_COUNT_TABLES) {
        const { rows: [key] } = await sql<{ name: string; definition: string }>`select conname as name, pg_get_constraintdef(oid) as definition
          from pg_constraint where conrelid = ${table}::regclass and contype = 'p'`.execute(db);
        if (!key) throw new Error(`migration 0027: no primary key on ${table}`);
        if (/\binclude\b/i.test(key.definition)) continue;
        const columns = /^PRIMARY KEY \(([\w, ]+)\)$/.exec(key.definition)?.[1].split(', ');
        if (!columns) throw new Error(`migration 0027: cannot read the primary key of ${table}`);
        await sql`alter table ${sql.table(table)} drop constraint ${sql.id(key.name)},
          add constraint ${sql.id(key.name)} primary key (${sql.join(columns.map((c) => sql.id(c)))}) include (n)`.execute(db);
      }
    },
  };
}
