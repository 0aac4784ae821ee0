import { randomBytes } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { Scope } from '../businesses/scopes.ts';
import { batchTime, type Lines, LostLease, nextBatchLines, writeBatch } from './batch.ts';
import { createStatisticsRefresh } from '../db/statistics.ts';
import type { Db } from '../db/types.ts';
import { CLI, type Actor, type WriteRunner } from '../write/runner.ts';
import { createLineApplier } from './apply.ts';
import type { ResourceName } from './lines.ts';
import { untraced } from '../telemetry/spans.ts';
import { chunkAt, claimImport, deleteChunks, releaseLeases, type Counts, type ImportRow } from './repository.ts';

/** How often an idle worker looks for imports (a new one on this instance wakes it at once). */
const IDLE_MS = 1000;

export interface ImportWorkerDeps {
  db: Db;
  writes: WriteRunner;
  clock: () => number;
  /** Imports this instance runs at once (IMPORT_CONCURRENCY); 0: none. */
  concurrency: number;
  /** How long this instance holds an import past its last line (IMPORT_LEASE_SECONDS); then another may resume it. */
  leaseMs: number;
  log: { warn(details: object, message: string): void };
  /** Only this import (the CLI applies the one it received); else any. */
  only?: string;
  /** Lines applied by this instance, by outcome (/metrics: their rate is the lines per second). */
  lines?: { inc(labels: { outcome: string }, value: number): void };
  /** Whether requests arrive at this instance (src/http/traffic.ts): a batch is then shorter (`batchTime`). */
  requestsArrive?: () => boolean;
}

export interface ImportWorker {
  start(): void;
  /** Wakes the worker: an import was just received. */
  kick(): void;
  /** Finishes the line in progress, gives up its leases, and waits. */
  stop(): Promise<void>;
}

/**
 * The tables an import grows, by the lines' resource: their statistics are refreshed after 200
 * lines, at most every 30 s (src/db/statistics.ts), for the tables its lines wrote. Without it, a
 * handle lookup read every item of the business, and a new item's last event version every item
 * event of it (decision 0053, session 63). A table no line wrote is not analysed: on a large
 * database an `ANALYZE` of the orders' tables takes longer than many batches (decision 0073).
 */
const GROWN_BY_EVERY_IMPORT = ['events', 'import_results'];
const GROWN_BY: Record<ResourceName, readonly string[]> = {
  item: ['items', 'item_variants', 'item_list_entries', 'platform_items'],
  buyer: ['phantoms', 'partnerships'],
  price_list: ['item_lists', 'item_list_entries'],
  order: ['orders', 'order_items', 'order_properties'],
  invoice: ['invoices', 'invoice_line_items'],
  acknowledgement: ['acknowledgements'],
  shipment: ['shipments'],
};

/**
 * Runs imports, in every instance. A batch of lines applies in one write with their results and
 * the import's progress, which succeeds only while this instance holds the lease and the lines are
 * not done yet: each line is done exactly once, whoever resumes after a crash. A failing line is
 * undone alone (src/write/part.ts), and its failure is its result.
 */
export function createImportWorker(deps: ImportWorkerDeps): ImportWorker {
  const { db, writes, clock } = deps;
  const owner = `iw_${randomBytes(8).toString('hex')}`;
  const running = new Map<string, Promise<void>>();
  let stopping = false;
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  const statistics = createStatisticsRefresh({
    db,
    tables: GROWN_BY_EVERY_IMPORT,
    clock,
    after: 200,
    everyMs: 30_000,
  });

  const iso = (ms: number) => new Date(ms).toISOString();

  async function runImport(imp: ImportRow): Promise<void> {
    const options = JSON.parse(imp.options) as { dryRun: boolean; onError: 'continue' | 'stop' };
    const scopes = imp.scopes === null ? null : (JSON.parse(imp.scopes) as Scope[]);
    const counts = JSON.parse(imp.counts) as Counts;
    const actor: Actor = imp.created_by === CLI.id ? CLI : { type: 'api_key', id: imp.created_by, name: null };
    const scope = { businessId: imp.business_id, actor, requestId: imp.id, long: true };

    const applier = createLineApplier({
      importId: imp.id,
      scopes,
      dryRun: options.dryRun,
      stopOnError: options.onError === 'stop',
      fromStart: imp.lines_done === 0,
      log: deps.log,
    });
    /** The lines the next batch takes (`nextBatchLines`). */
    let budget = 8;

    const run = {
      imp,
      held: { id: imp.id, owner },
      applier,
      dryRun: options.dryRun,
      stopOnError: options.onError === 'stop',
      clock,
      leaseMs: deps.leaseMs,
    };
    /** One batch of lines, in one write (`writeBatch`): null when this instance no longer holds the import. */
    const runBatch = (lines: Lines) => {
      const batchMs = batchTime(db, deps.requestsArrive?.() ?? false);
      return writes
        .run(scope, (ctx) => writeBatch(ctx, run, counts, { budget, batchMs }, lines))
        .then(
          (batch) => {
            // Committed: the batch's lines count now, and not before.
            applier.committed();
            // A short batch (the end of the chunk or of the import) says little of a full one's pace, unless it was slow.
            const took = performance.now() - batch.began;
            if (batch.taken > 0 && (batch.taken >= budget || took >= batchMs))
              budget = nextBatchLines(batch.taken, took, batchMs);
            for (const outcome of ['created', 'updated', 'unchanged', 'failed'] as const) {
              if (batch.next[outcome] > counts[outcome])
                deps.lines?.inc({ outcome }, batch.next[outcome] - counts[outcome]);
            }
            Object.assign(counts, batch.next);
            return batch;
          },
          (error) => {
            if (error instanceof LostLease) return null;
            throw error;
          },
        );
    };

    let done = imp.lines_done;
    let stopped = false;
    while (!stopping && !stopped && done < imp.total_lines) {
      const chunk = await chunkAt(db, imp.id, done + 1);
      const texts = chunk ? chunk.data.toString('utf8').split('\n') : [];
      const end = chunk ? chunk.line_count : 0;
      let i = chunk ? done + 1 - chunk.first_line : 0;
      do {
        const batch = await runBatch({ texts, from: i, to: end, first: chunk ? chunk.first_line + i : done + 1 });
        if (!batch) return;
        statistics.grew(
          batch.line - done,
          [...batch.wrote].flatMap((resource) => GROWN_BY[resource]),
        );
        ({ line: done, stopped } = batch);
        // Without it the import goes on as it was; it is not worth stopping for.
        await statistics
          .refreshIfDue()
          .catch((err) => deps.log.warn({ err }, 'import: the statistics were not refreshed'));
        i = chunk ? done + 1 - chunk.first_line : 0;
        // Live requests get their turn between batches: SQLite's driver is synchronous, and without
        // this an import would run as one chain of promises that keeps the event loop from the sockets.
        await setImmediate();
      } while (i < end && !stopping && !stopped);
    }
    // The file is not needed once the import has finished; its results are.
    if (done >= imp.total_lines || stopped) await deleteChunks(db, imp.id);
  }

  async function pass(): Promise<void> {
    while (!stopping && running.size < deps.concurrency) {
      const now = clock();
      const imp = await claimImport(db, owner, iso(now), iso(now + deps.leaseMs), [...running.keys()], deps.only);
      if (!imp) return;
      const run = runImport(imp)
        .catch((err) =>
          deps.log.warn({ err, importId: imp.id }, 'import: a pass failed; the import resumes when its lease passes'),
        )
        .finally(() => {
          running.delete(imp.id);
          if (!stopping) schedule(0);
        });
      running.set(imp.id, run);
    }
  }

  let passing: Promise<void> | null = null;
  function schedule(ms: number) {
    if (stopping || !started) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (passing) return schedule(IDLE_MS);
      passing = pass()
        .catch((err) => deps.log.warn({ err }, 'import: looking for imports failed'))
        .finally(() => {
          passing = null;
          schedule(IDLE_MS);
        });
    }, ms);
    timer.unref();
  }

  return {
    start() {
      if (deps.concurrency === 0 || started) return;
      started = true;
      schedule(0);
    },
    // Woken by the upload's request: the import's work is not part of that request's trace.
    kick() {
      if (started) untraced(() => schedule(0));
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await passing;
      await Promise.all(running.values());
      if (started)
        await releaseLeases(db, owner).catch((err) =>
          deps.log.warn({ err }, 'import: leases were not released; they pass in 30 s'),
        );
    },
  };
}
