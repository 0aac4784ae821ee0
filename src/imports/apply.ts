import type { Scope } from '../businesses/scopes.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { ApiError, validationError } from '../lib/errors.ts';
import { runPart, WriteBroken } from '../write/part.ts';
import type { WriteContext } from '../write/runner.ts';
import { parseLine, refOf, resolveReferences, type ParsedLine, type Referenced } from './lines.ts';
import { applyLine, checkOperation, createsMany, type Applied } from './operations.ts';
import { findLinesByRef, findResultByRef } from './repository.ts';
import { DryRunNotes } from './dry-run-notes.ts';

export type Outcome = { applied: Applied } | { error: ApiError };

/** A line done: what it read as, what it did, and its result as a reference to it reads it. */
export interface LineDone {
  parsed: ParsedLine | null;
  outcome: Outcome;
  result: Referenced;
}

/** Earlier lines' results a run keeps by ref (about 200 bytes each). */
const KNOWN_REFS = 10_000;
/** Create lines of one kind stored together, at most: one multi-row statement per table. */
const GROUP_LINES = 100;

/**
 * Applies one import's lines in the write of their batch (src/imports/worker.ts): read, references
 * resolved, checked, and applied as a part of the write (src/write/part.ts), so a line that fails
 * is undone alone and its failure is its result. A run of create lines whose operation takes many
 * at once (items, orders) is held, then stored together in one part; if that part fails, its lines are
 * applied one at a time as any other line.
 */
export function createLineApplier(run: {
  importId: string;
  scopes: Scope[] | null;
  dryRun: boolean;
  stopOnError: boolean;
  /** The run starts at the import's first line: every earlier line's ref is one this run saw. */
  fromStart: boolean;
  log: { warn(details: object, message: string): void };
}) {
  /**
   * Earlier lines' results by ref, as this run read or wrote them: a result never changes once its
   * batch commits. Orders name the same items and buyer line after line; this saves a query for each
   * such reference. What the batch in progress learnt is `pending` until it commits (`committed`):
   * a write that is undone and run again (src/write/groups.ts) must not find its own lines there.
   */
  const known = new Map<string, Referenced>();
  const pending = new Map<string, Referenced>();
  const recall = (ref: string) => pending.get(ref) ?? known.get(ref);
  /**
   * Whether `known` holds every ref of the import's earlier lines: the run began at its first line
   * and has forgotten none. Held lines are then checked against it alone, not read from the results.
   */
  let knowsAll = run.fromStart;
  /** Lines checked and held to be created together, and the refs they carry. */
  let held: { line: number; parsed: ParsedLine; first: boolean; resolved: ParsedLine }[] = [];
  const heldRefs = new Map<string, number>();
  /** How many lines a store takes: the batch's lines (`begin`), up to GROUP_LINES. */
  let groupLines = GROUP_LINES;
  /** A dry run's notes of what earlier lines of an order would have changed. */
  const notes = new DryRunNotes();

  /**
   * Line `line`, in the batch's write: the lines this finished, in order. That is this line, or
   * none while it is held, and before it any held lines it had to wait for.
   */
  async function apply(ctx: WriteContext, line: number, text: string): Promise<LineDone[]> {
    let parsed: ParsedLine | null = null;
    let first = false;
    const done: LineDone[] = [];
    try {
      parsed = parseLine(text);
      const find = async (ref: string) => {
        // A line that names a held line's ref reads its result: the held lines are stored first.
        if (heldRefs.has(ref)) done.push(...(await flush(ctx)));
        let found = recall(ref);
        // Where the run knows every earlier line's ref, one it does not know is no line's.
        if (found === undefined && !knowsAll) {
          found = await findResultByRef(ctx.trx, run.importId, ref);
          if (found) pending.set(ref, found);
        }
        return found;
      };
      const ref = parsed.ref ?? undefined;
      // A line that may be held has its ref checked against earlier batches' results with the rest it is held with.
      const holdable = !run.dryRun && !run.stopOnError && createsMany(parsed) !== undefined;
      if (ref !== undefined) {
        // A second line with a held line's ref: which of them is first is known once those are stored.
        if (heldRefs.has(ref)) done.push(...(await flush(ctx)));
        const earlier = recall(ref)?.line ?? (holdable ? undefined : (await find(ref))?.line);
        if (earlier !== undefined) throw duplicateRef(earlier, ref);
        // The first line with this ref: the one that references to it name.
        first = true;
      }
      let resolved: ParsedLine;
      let unresolved: number[];
      try {
        ({ line: resolved, unresolved } = await resolveReferences(parsed, find));
        checkOperation(resolved, run.scopes);
      } catch (caught) {
        const earlier = holdable && ref !== undefined ? (await find(ref))?.line : undefined;
        if (earlier === undefined) throw caught;
        first = false;
        throw duplicateRef(earlier, ref!);
      }
      if (holdable) {
        if (held.length > 0 && held[0].resolved.resource !== resolved.resource) done.push(...(await flush(ctx)));
        held.push({ line, parsed, first, resolved });
        if (ref !== undefined) heldRefs.set(ref, line);
        if (held.length >= groupLines) done.push(...(await flush(ctx)));
        return done;
      }
      if (held.length > 0) done.push(...(await flush(ctx)));
      // A dry run's line that names a record an earlier line of the dry run would have made: checked as far as it can be without it.
      if (unresolved.length > 0)
        return [
          ...done,
          finish(line, parsed, first, {
            applied: { outcome: resolved.op === 'create' ? 'created' : 'updated', id: '', checkedWithout: unresolved },
          }),
        ];
      const outcome = await applyOne(ctx, line, resolved);
      const noted =
        run.dryRun && 'applied' in outcome ? { applied: notes.note(line, resolved, outcome.applied) } : outcome;
      return [...done, finish(line, parsed, first, noted)];
    } catch (caught) {
      // A line refused before it parsed still names its ref, where its text has one.
      const named = parsed ?? ({ ref: refOf(text) } as ParsedLine);
      return [...done, finish(line, named, first, failure(caught, line))];
    }
  }

  /** One checked line as a part of the write. */
  async function applyOne(ctx: WriteContext, line: number, resolved: ParsedLine): Promise<Outcome> {
    try {
      const { result, kept } = await runPart(ctx, (part) => applyLine(part, resolved), { keep: !run.dryRun });
      if (kept) return { applied: result };
      // A dry run made nothing: a create's result has no record to name, only the number of its variants.
      return {
        applied:
          result.outcome === 'created' ? { outcome: 'created', id: '', variants: result.variantIds?.length } : result,
      };
    } catch (caught) {
      return failure(caught, line);
    }
  }

  /** The held lines, stored together: each one's outcome. */
  async function flush(ctx: WriteContext): Promise<LineDone[]> {
    const all = held;
    held = [];
    heldRefs.clear();
    if (all.length === 0) return [];
    // Their refs, against the results of earlier batches: a line whose ref an earlier line has fails.
    // Each was checked against `known` as it was held; where that holds them all, there is no more to read.
    const refs = knowsAll ? [] : all.flatMap(({ parsed }) => (parsed.ref ? [parsed.ref] : []));
    const earlier = refs.length > 0 ? await findLinesByRef(ctx.trx, run.importId, refs) : new Map<string, number>();
    const dropped = new Map<(typeof all)[number], Outcome>();
    for (const l of all) {
      const at = l.parsed.ref ? earlier.get(l.parsed.ref) : undefined;
      if (at !== undefined) dropped.set(l, { error: duplicateRef(at, l.parsed.ref!) });
    }
    const lines = all.filter((l) => !dropped.has(l));
    let outcomes: Outcome[] = [];
    if (lines.length > 0) {
      try {
        const { result } = await runPart(ctx, (part) =>
          createsMany(lines[0].resolved)!(
            part,
            lines.map((l) => l.resolved),
          ),
        );
        outcomes = result.map((r) => (r instanceof ApiError ? { error: r } : { applied: r }));
      } catch (caught) {
        if (caught instanceof WriteBroken || isDatabaseUnavailable(caught)) throw caught;
        for (const l of lines) outcomes.push(await applyOne(ctx, l.line, l.resolved));
      }
    }
    const stored = new Map(lines.map((l, i) => [l, outcomes[i]]));
    return all.map((l) => {
      const outcome = dropped.get(l);
      return outcome ? finish(l.line, l.parsed, false, outcome) : finish(l.line, l.parsed, l.first, stored.get(l)!);
    });
  }

  /** A line's result; the first line with a ref is remembered by it, for the lines after it. */
  function finish(line: number, parsed: ParsedLine | null, first: boolean, outcome: Outcome): LineDone {
    const failed = 'error' in outcome;
    const result: Referenced = {
      line,
      outcome: failed ? 'failed' : outcome.applied.outcome,
      recordId: failed ? null : outcome.applied.id || null,
      variantIds: failed ? undefined : outcome.applied.variantIds,
      variants: failed ? undefined : outcome.applied.variants,
    };
    if (first) pending.set(parsed!.ref!, result);
    return { parsed, outcome, result };
  }

  function duplicateRef(line: number, ref: string): ApiError {
    return validationError({ ref: `Line ${line} already has the ref '${ref}'` });
  }

  /** A line's failure as its result; a broken write or an unreachable database fails the batch instead. */
  function failure(caught: unknown, line: number): Outcome {
    if (caught instanceof WriteBroken || isDatabaseUnavailable(caught)) throw caught;
    if (caught instanceof ApiError) return { error: caught };
    // Not the line's fault as far as anyone can tell: logged, and the line fails rather than the import sticking on it.
    run.log.warn({ err: caught, importId: run.importId, line }, 'import: a line failed unexpectedly');
    return { error: new ApiError('INTERNAL_ERROR', 'The line could not be applied') };
  }

  return {
    apply,
    flush,
    /**
     * A batch's write begins (again, if it was undone): nothing it held or learnt before counts. It
     * takes up to `lines` lines (src/imports/worker.ts), held lines stored together as one store.
     */
    begin(lines = GROUP_LINES) {
      groupLines = Math.max(1, Math.min(GROUP_LINES, lines));
      pending.clear();
      held = [];
      heldRefs.clear();
    },
    /** The batch's write committed: what it learnt by ref is known. */
    committed() {
      for (const [ref, result] of pending) {
        if (!known.has(ref) && known.size >= KNOWN_REFS) {
          known.delete(known.keys().next().value!);
          knowsAll = false;
        }
        known.set(ref, result);
      }
      pending.clear();
    },
  };
}

export type LineApplier = ReturnType<typeof createLineApplier>;
