import { randomBytes } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { Scope } from '../businesses/scopes.ts';
import type { Db } from '../db/types.ts';
import { ApiError, validationError } from '../lib/errors.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { CLI, type Actor, type WriteContext, type WriteRunner } from '../write/runner.ts';
import { lineError, parseLine, resolveReferences, type ParsedLine } from './lines.ts';
import { applyLine, checkOperation, type Applied } from './operations.ts';
import {
  advance, chunkAt, claimImport, deleteChunks, findResultByRef, insertResult, releaseLeases, type Counts, type ImportRow,
} from './repository.ts';

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
}

export interface ImportWorker {
  start(): void;
  /** Wakes the worker: an import was just received. */
  kick(): void;
  /** Finishes the line in progress, gives up its leases, and waits. */
  stop(): Promise<void>;
}

type Outcome = { applied: Applied } | { error: ApiError };

/**
 * Runs imports, in every instance. Each line applies in one write transaction together with its
 * result row and the import's progress (`advance`), which succeeds only while this instance holds
 * the import's lease and the line is not done yet: a line is done exactly once, whichever instance
 * resumes the import after a crash. A line that fails rolls back, and its failure is recorded in a
 * transaction of its own, under the same condition.
 */
export function createImportWorker(deps: ImportWorkerDeps): ImportWorker {
  const { db, writes, clock } = deps;
  const owner = `iw_${randomBytes(8).toString('hex')}`;
  const running = new Map<string, Promise<void>>();
  let stopping = false;
  let started = false;
  let timer: NodeJS.Timeout | undefined;

  const iso = (ms: number) => new Date(ms).toISOString();

  async function runImport(imp: ImportRow): Promise<void> {
    const options = JSON.parse(imp.options) as { dryRun: boolean; onError: 'continue' | 'stop' };
    const scopes = imp.scopes === null ? null : JSON.parse(imp.scopes) as Scope[];
    const counts = JSON.parse(imp.counts) as Counts;
    const actor: Actor = imp.created_by === CLI.id ? CLI : { type: 'api_key', id: imp.created_by, name: null };
    const scope = { businessId: imp.business_id, actor, requestId: imp.id };
    const held = { id: imp.id, owner };
    let done = imp.lines_done;

    /** Records line `line`'s result and the import's progress, in `trx`; false if this instance no longer may. */
    const record = async (trx: Db, line: number, parsed: { ref: string | null } | null, outcome: Outcome, stop: boolean) => {
      const next = { ...counts };
      if ('error' in outcome) next.failed++;
      else next[outcome.applied.outcome]++;
      const last = line === imp.total_lines || stop;
      const finished = last ? { state: stop ? 'STOPPED' as const : 'COMPLETED' as const, at: iso(clock()) } : undefined;
      if (!await advance(trx, held, line, { counts: next, leaseUntil: iso(clock() + deps.leaseMs), finished })) return false;
      await insertResult(trx, {
        import_id: imp.id, line, ref: parsed?.ref ?? null,
        outcome: 'error' in outcome ? 'failed' : outcome.applied.outcome,
        record_id: 'error' in outcome ? null : (outcome.applied.id || null),
        detail: 'error' in outcome ? JSON.stringify({ error: lineError(outcome.error) })
          : outcome.applied.variantIds ? JSON.stringify({ variantIds: outcome.applied.variantIds }) : null,
      });
      Object.assign(counts, next);
      return true;
    };

    /** Records a line that wrote nothing (failed, unchanged, or a dry run's) in a transaction of its own. */
    const recordAlone = (line: number, parsed: { ref: string | null } | null, outcome: Outcome, stop: boolean) =>
      writes.run(scope, async (ctx) => {
        if (!await record(ctx.trx, line, parsed, outcome, stop)) throw new LostLease();
        return true;
      });

    /** One line, start to end: `lost` when the lease was lost and the import is no longer this instance's. */
    const doLine = async (line: number, text: string): Promise<'next' | 'stopped' | 'lost'> => {
      let parsed: ParsedLine | null = null;
      try {
        parsed = parseLine(text);
        if (parsed.ref !== undefined && parsed.ref !== null) {
          const earlier = await findResultByRef(db, imp.id, parsed.ref);
          if (earlier) throw validationError({ ref: `Line ${earlier.line} already has the ref '${parsed.ref}'` });
        }
        const { line: resolved, unresolved } = await resolveReferences(parsed, (ref) => findResultByRef(db, imp.id, ref));
        checkOperation(resolved, scopes);
        if (unresolved) {
          // A dry run's line that names a record an earlier line of the dry run would have made: checked as far as it can be without it.
          await recordAlone(line, parsed, { applied: { outcome: resolved.op === 'create' ? 'created' : 'updated', id: '' } }, false);
          return 'next';
        }
        let unchanged = false;
        let written = false;
        const applied = await writes.run(scope, async (ctx) => {
          // A patch that changes nothing discards its write (src/write/update.ts): its result is recorded on its own.
          const lineCtx: WriteContext = { ...ctx, discard: () => { unchanged = true; ctx.discard(); } };
          const result = await applyLine(lineCtx, resolved);
          if (options.dryRun) ctx.discard();
          if (unchanged || options.dryRun) return result;
          if (!await record(ctx.trx, line, parsed, { applied: result }, false)) throw new LostLease();
          written = true;
          return result;
        });
        if (!written) {
          const outcome: Applied = unchanged ? { ...applied, outcome: 'unchanged' }
            // A dry run made nothing: a create's result has no record to name.
            : { ...applied, id: applied.outcome === 'created' ? '' : applied.id, variantIds: applied.outcome === 'created' ? undefined : applied.variantIds };
          await recordAlone(line, parsed, { applied: outcome }, false);
        }
        return 'next';
      } catch (caught) {
        if (caught instanceof LostLease) return 'lost';
        if (isDatabaseUnavailable(caught)) throw caught;
        let error = caught;
        if (!(error instanceof ApiError)) {
          // Not the line's fault as far as anyone can tell: logged, and the line fails rather than the import sticking on it.
          deps.log.warn({ err: error, importId: imp.id, line }, 'import: a line failed unexpectedly');
          error = new ApiError('INTERNAL_ERROR', 'The line could not be applied');
        }
        const stop = options.onError === 'stop';
        try {
          await recordAlone(line, parsed, { error: error as ApiError }, stop);
        } catch (again) {
          if (again instanceof LostLease) return 'lost';
          throw again;
        }
        return stop ? 'stopped' : 'next';
      }
    };

    let stoppedOnError = false;
    work: while (!stopping && done < imp.total_lines) {
      const chunk = await chunkAt(db, imp.id, done + 1);
      if (!chunk) {
        // Past the last run of lines: nothing but the count is left.
        if (!await skipBlank(imp.total_lines)) return;
        break;
      }
      const lines = chunk.data.toString('utf8').split('\n');
      for (let i = done + 1 - chunk.first_line; i < chunk.line_count && !stopping; i++) {
        const line = chunk.first_line + i;
        const next = lines[i].trim() === '' ? (await skipBlank(line) ? 'next' : 'lost') : await doLine(line, lines[i]);
        // Live requests get their turn between lines: SQLite's driver is synchronous, and without this
        // an import would run as one chain of promises that keeps the event loop from the sockets.
        await setImmediate();
        if (next === 'lost') return;
        done = line;
        if (next === 'stopped') { stoppedOnError = true; break work; }
      }
    }
    // The file is not needed once the import has finished; its results are.
    if (done >= imp.total_lines || stoppedOnError) await deleteChunks(db, imp.id);

    /** A blank line: progress only (the last line finishes the import). */
    async function skipBlank(line: number): Promise<boolean> {
      const last = line === imp.total_lines;
      const ok = await writes.run(scope, (ctx) => advance(ctx.trx, held, line, {
        counts, leaseUntil: iso(clock() + deps.leaseMs), finished: last ? { state: 'COMPLETED', at: iso(clock()) } : undefined,
      }));
      if (ok) done = line;
      return ok;
    }
  }

  async function pass(): Promise<void> {
    while (!stopping && running.size < deps.concurrency) {
      const now = clock();
      const imp = await claimImport(db, owner, iso(now), iso(now + deps.leaseMs), [...running.keys()], deps.only);
      if (!imp) return;
      const run = runImport(imp)
        .catch((err) => deps.log.warn({ err, importId: imp.id }, 'import: a pass failed; the import resumes when its lease passes'))
        .finally(() => { running.delete(imp.id); if (!stopping) schedule(0); });
      running.set(imp.id, run);
    }
  }

  let passing: Promise<void> | null = null;
  function schedule(ms: number) {
    if (stopping || !started) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (passing) return schedule(IDLE_MS);
      passing = pass().catch((err) => deps.log.warn({ err }, 'import: looking for imports failed'))
        .finally(() => { passing = null; schedule(IDLE_MS); });
    }, ms);
    timer.unref();
  }

  return {
    start() {
      if (deps.concurrency === 0 || started) return;
      started = true;
      schedule(0);
    },
    kick() { if (started) schedule(0); },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await passing;
      await Promise.all(running.values());
      if (started) await releaseLeases(db, owner).catch((err) => deps.log.warn({ err }, 'import: leases were not released; they pass in 30 s'));
    },
  };
}

/** This instance's lease on the import passed and another took it: the transaction rolls back, and this instance lets go. */
class LostLease extends Error {}
