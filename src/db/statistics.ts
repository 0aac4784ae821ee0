import { analyzeGrownTables } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * PostgreSQL plans, and keeps the plans of its prepared statements, for tables as it last counted
 * them. A worker that grows tables far faster than autovacuum looks (an import, a webhook replay)
 * refreshes their statistics itself: once `after` rows have grown, at most every `everyMs`, and
 * sooner while its tables double: when the rows grown since the last refresh are as many as all it
 * had grown before. A plan made while a table was small (a scan of every row, which a small table
 * makes cheapest) is then made again before the table outgrows it, not up to `everyMs` later: an
 * import's handle lookups ran such a plan for 20 s, at 1.5 ms a lookup against 0.05 (decision 0053).
 * A refresh analyses only the tables grown by a tenth of the rows PostgreSQL last counted in them
 * (`analyzeGrownTables`): a plan made for a large table does not change for a few more rows, and an
 * `ANALYZE` of a business's orders takes most of a second (decision 0073). SQLite: nothing to do.
 */
export interface StatisticsRefresh {
  /** Counts `rows` more rows grown, in the worker's tables and in `tables`. */
  grew(rows: number, tables?: Iterable<string>): void;
  /**
   * When enough has grown since the last time, and that was long enough ago or they doubled, runs
   * `ANALYZE` on the tables grown whose statistics are stale.
   */
  refreshIfDue(): Promise<void>;
}

export function createStatisticsRefresh(opts: {
  db: Db;
  tables: string[];
  clock: () => number;
  after: number;
  everyMs: number;
}): StatisticsRefresh {
  const { db, tables, clock, after, everyMs } = opts;
  let grown = 0;
  /** The rows grown before the last refresh. */
  let before = 0;
  let refreshedAt = Number.NEGATIVE_INFINITY;
  /** The rows each table grew since it was last analysed: a table no write grew is not analysed. */
  const grownBy = new Map<string, number>();
  return {
    grew(rows, more = []) {
      grown += rows;
      for (const table of new Set([...tables, ...more])) grownBy.set(table, (grownBy.get(table) ?? 0) + rows);
    },
    async refreshIfDue() {
      if (grown < after || (grown < before && clock() - refreshedAt < everyMs)) return;
      before += grown;
      grown = 0;
      refreshedAt = clock();
      for (const table of await analyzeGrownTables(db, grownBy)) grownBy.delete(table);
    },
  };
}
