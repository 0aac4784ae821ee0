import { sql, type Kysely, type Migration } from 'kysely';

/**
 * An import line's reference to an earlier line reads the first result with that ref
 * (src/imports/repository.ts findResultByRef). With the index by (import, ref) alone, SQLite chose
 * to walk the import's results in line order instead, so each lookup cost more as the import went
 * on (0.19 ms per lookup over 7,000 lines). The index by (import, ref, line) answers it at once.
 * An index only: an earlier release runs beside it unchanged.
 */
export const importRefsByLine: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('import_results_ref_line').on('import_results').columns(['import_id', 'ref', 'line']).execute();
    await sql`drop index if exists import_results_ref`.execute(db);
  },
};
