import { analyzeTables } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * PostgreSQL plans, and keeps the plans of its prepared statements, for tables as it last counted
 * them. A worker that grows tables far faster than autovacuum looks (an import, a webhook replay)
 * refreshes their statistics itself: once `after` rows have grown, at most every `everyMs`.
 * SQLite: nothing to do.
 */
export interface StatisticsRefresh {
  /** Counts `rows` more rows grown. */
  grew(rows: number): void;
  /** Runs `ANALYZE` on the tables when enough has grown since the last time, and that was long enough ago. */
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
  let refreshedAt = Number.NEGATIVE_INFINITY;
  return {
    grew(rows) {
      grown += rows;
    },
    async refreshIfDue() {
      if (grown < after || clock() - refreshedAt < everyMs) return;
      grown = 0;
      refreshedAt = clock();
      await analyzeTables(db, tables);
    },
  };
}
