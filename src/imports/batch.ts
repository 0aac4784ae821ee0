import { writesHoldEveryRequest } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import type { WriteContext } from '../write/runner.ts';
import type { LineApplier, LineDone, Outcome } from './apply.ts';
import { lineError, type ResourceName } from './lines.ts';
import { advance, insertResults, type Counts, type ImportRow } from './repository.ts';
import type { ImportResultTable } from './table.ts';

/**
 * Lines of an import are applied in batches, each one write transaction. A batch takes as many
 * lines as ran in its time, from its first line to its COMMIT, at the pace of the batch before
 * (`nextBatchLines`), and at most BATCH_LINES; it also ends once its lines have run its time. On
 * SQLite every request waits for the batch running; on PostgreSQL only the business's other writes
 * wait for it (for its write lock), and its round trips and COMMIT cost more. While API requests
 * arrive, a batch takes 2.5 ms on SQLite and 6 on PostgreSQL (decision 0076); while none does, 10
 * and 24, so that what each batch costs whatever its lines (its COMMIT, the turn between batches)
 * is paid less often (decision 0078). docs/decisions/0044-bulk-import.md has the first measurements.
 */
const BATCH_LINES = 200;
/**
 * A batch's time, alone and while API requests arrive: where every request waits for it (SQLite),
 * and where only the business's writes do (PostgreSQL).
 */
const BATCH_MS = {
  everyRequest: { alone: 10, beside: 2.5 },
  businessWrites: { alone: 24, beside: 6 },
} as const;

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

/** A batch's time on `db` (BATCH_MS), as what waits for a batch there, and whether requests arrive. */
export function batchTime(db: Db, requestsArrive: boolean): number {
  const times = writesHoldEveryRequest(db) ? BATCH_MS.everyRequest : BATCH_MS.businessWrites;
  return requestsArrive ? times.beside : times.alone;
}

/** What a batch needs of its import's run (src/imports/worker.ts). */
export interface BatchRun {
  imp: Pick<ImportRow, 'id' | 'total_lines'>;
  /** The import's lease, as this instance holds it. */
  held: { id: string; owner: string };
  applier: LineApplier;
  dryRun: boolean;
  stopOnError: boolean;
  clock: () => number;
  leaseMs: number;
}

export interface BatchDone {
  /** The last line done. */
  line: number;
  /** Whether the import stopped on a line's error. */
  stopped: boolean;
  /** The import's counts with the batch's lines. */
  next: Counts;
  /** The lines it took, blank ones included. */
  taken: number;
  /** When its first line began (`performance.now()`). */
  began: number;
  /** The resources of the lines that wrote. */
  wrote: Set<ResourceName>;
}

/**
 * What a line's result says beyond its outcome and id: its error; a create's variants (their ids,
 * or in a dry run their number); a dry run's line checked without what earlier lines would have made.
 */
function resultDetail(outcome: Outcome): string | null {
  if ('error' in outcome) return JSON.stringify({ error: lineError(outcome.error) });
  const { variantIds, variants, checkedWithout } = outcome.applied;
  if (variantIds) return JSON.stringify({ variantIds });
  if (variants !== undefined) return JSON.stringify({ variants });
  if (checkedWithout) {
    const lines = checkedWithout.length === 1 ? `line ${checkedWithout[0]}` : `lines ${checkedWithout.join(', ')}`;
    return JSON.stringify({ note: `Checked without what ${lines} would have made: a dry run makes nothing` });
  }
  return null;
}

/** This instance's lease on the import passed and another took it: the write rolls back, and this instance lets go. */
export class LostLease extends Error {}

/** Lines of a chunk of the file: `texts[from]` up to `texts[to]` (not taken), the first of them line `first`. */
export interface Lines {
  texts: string[];
  from: number;
  to: number;
  first: number;
}

/**
 * Applies `lines` in order, in the write `ctx`, until the batch is full
 * (`batchFull`) or the run of lines ends; then stores their results and the import's progress, which
 * succeeds only while this instance holds the lease (else LostLease). Blank lines count as done and
 * have no result.
 */
export async function writeBatch(
  ctx: WriteContext,
  run: BatchRun,
  counts: Counts,
  size: { budget: number; batchMs: number },
  { texts, from, to, first }: Lines,
): Promise<BatchDone> {
  const { imp, applier } = run;
  applier.begin(size.budget);
  const next = { ...counts };
  const began = performance.now();
  let taken = 0;
  const results: ImportResultTable[] = [];
  const wrote = new Set<ResourceName>();
  let line = first - 1;
  let stopped = false;
  const record = (done: LineDone[]) => {
    for (const { parsed, outcome, result } of done) {
      next[result.outcome as keyof Counts]++;
      results.push({
        import_id: imp.id,
        line: result.line,
        ref: parsed?.ref ?? null,
        outcome: result.outcome,
        record_id: result.recordId,
        detail: resultDetail(outcome),
      });
      stopped ||= 'error' in outcome && run.stopOnError;
      if (parsed && !run.dryRun && (result.outcome === 'created' || result.outcome === 'updated'))
        wrote.add(parsed.resource);
    }
  };
  for (let i = from; i < to && !stopped; i++) {
    if (i > from && batchFull(i - from, performance.now() - began, size.budget, size.batchMs)) break;
    taken++;
    line = first + (i - from);
    if (texts[i].trim() === '') continue;
    record(await applier.apply(ctx, line, texts[i]));
  }
  record(await applier.flush(ctx));
  await insertResults(ctx.trx, results);
  // Past the last run of lines (`from === to`): nothing but the count is left.
  if (from === to) line = imp.total_lines;
  const at = (ms: number) => new Date(ms).toISOString();
  const finished =
    stopped || line === imp.total_lines
      ? { state: stopped ? ('STOPPED' as const) : ('COMPLETED' as const), at: at(run.clock()) }
      : undefined;
  const leaseUntil = at(run.clock() + run.leaseMs);
  if (!(await advance(ctx.trx, run.held, line, { counts: next, leaseUntil, finished }))) throw new LostLease();
  return { line, stopped, next, taken, began, wrote };
}
