import { writesHoldEveryRequest } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';

/**
 * Lines of an import are applied in batches, each one write transaction. A batch takes as many
 * lines as ran in its time, from its first line to its COMMIT, at the pace of the batch before
 * (`nextBatchLines`), and at most BATCH_LINES; it also ends once its lines have run its time. On
 * SQLite every request waits for the batch running, so it takes 5 ms; on PostgreSQL only the
 * business's other writes wait for it (for its write lock), and it takes 12 ms, as its round trips
 * and COMMIT cost more. docs/decisions/0044-bulk-import.md has the measurements behind the numbers.
 */
const BATCH_LINES = 200;
/** A batch's time where every request waits for it (SQLite), and where only the business's writes do (PostgreSQL). */
const BATCH_MS = { everyRequest: 5, businessWrites: 12 } as const;

/**
 * How many lines the next batch takes, after one of `lines` took `tookMs` of its `batchMs` from its
 * first line to its COMMIT: as many as fit at its pace; one more than it took while it ran under
 * the time, as the batch's own cost (its COMMIT, its round trips) makes a small one's pace per line
 * look slow; and no fewer than half as many after one slow batch (a pause for garbage collection,
 * say), which would otherwise leave the import at a line or two a batch for a while.
 */
export function nextBatchLines(lines: number, tookMs: number, batchMs: number): number {
  const fit = Math.floor((lines * batchMs) / tookMs);
  const next = tookMs < batchMs ? Math.max(lines + 1, fit) : Math.max(fit, Math.ceil(lines / 2));
  return Math.max(1, Math.min(BATCH_LINES, next));
}

/** Whether a batch takes no more lines, after `lines` that ran `ms` of `batchMs`, when it was to take `budget` (`nextBatchLines`). */
export function batchFull(lines: number, ms: number, budget: number, batchMs: number): boolean {
  return lines >= budget || ms >= batchMs;
}

/** A batch's time on `db`: BATCH_MS, as what waits for a batch there. */
export function batchTime(db: Db): number {
  return writesHoldEveryRequest(db) ? BATCH_MS.everyRequest : BATCH_MS.businessWrites;
}
