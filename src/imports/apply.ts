import type { Scope } from '../businesses/scopes.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { ApiError, validationError } from '../lib/errors.ts';
import { runPart, WriteBroken } from '../write/part.ts';
import type { WriteContext } from '../write/runner.ts';
import { parseLine, resolveReferences, type ParsedLine, type Referenced } from './lines.ts';
import { applyLine, checkOperation, type Applied } from './operations.ts';
import { findResultByRef } from './repository.ts';

export type Outcome = { applied: Applied } | { error: ApiError };

/** Earlier lines' results a run keeps by ref (about 200 bytes each). */
const KNOWN_REFS = 10_000;

/**
 * Applies one import's lines, one at a time, each in the write of its batch (src/imports/worker.ts):
 * read, references resolved, checked, and applied as a part of the write (src/write/part.ts), so a
 * line that fails is undone alone and its failure is its result.
 */
export function createLineApplier(run: {
  importId: string;
  scopes: Scope[] | null;
  dryRun: boolean;
  log: { warn(details: object, message: string): void };
}) {
  /**
   * Earlier lines' results by ref, as this run read or wrote them: a result never changes once its
   * batch commits, and the map goes with the run when a batch does not. Orders name the same items
   * and buyer line after line; this saves a query for each such reference.
   */
  const known = new Map<string, Referenced>();
  const remember = (ref: string, result: Referenced) => {
    if (known.size >= KNOWN_REFS) known.delete(known.keys().next().value!);
    known.set(ref, result);
  };

  /** Line `line`, in the batch's write: what it did, or the error it failed with; `first` when it is the first with its ref. */
  async function apply(
    ctx: WriteContext,
    line: number,
    text: string,
  ): Promise<{ parsed: ParsedLine | null; first: boolean; outcome: Outcome }> {
    let parsed: ParsedLine | null = null;
    let first = false;
    try {
      parsed = parseLine(text);
      const find = async (ref: string) => {
        const found = known.get(ref) ?? (await findResultByRef(ctx.trx, run.importId, ref));
        if (found) remember(ref, found);
        return found;
      };
      if (parsed.ref !== undefined && parsed.ref !== null) {
        const earlier = await find(parsed.ref);
        if (earlier) throw validationError({ ref: `Line ${earlier.line} already has the ref '${parsed.ref}'` });
        // The first line with this ref: the one that references to it name.
        first = true;
      }
      const { line: resolved, unresolved } = await resolveReferences(parsed, find);
      checkOperation(resolved, run.scopes);
      // A dry run's line that names a record an earlier line of the dry run would have made: checked as far as it can be without it.
      if (unresolved)
        return {
          parsed,
          first,
          outcome: { applied: { outcome: resolved.op === 'create' ? 'created' : 'updated', id: '' } },
        };
      const { result, kept } = await runPart(ctx, (part) => applyLine(part, resolved), { keep: !run.dryRun });
      if (kept) return { parsed, first, outcome: { applied: result } };
      // A dry run made nothing: a create's result has no record to name.
      return {
        parsed,
        first,
        outcome: { applied: result.outcome === 'created' ? { outcome: 'created', id: '' } : result },
      };
    } catch (caught) {
      if (caught instanceof WriteBroken || isDatabaseUnavailable(caught)) throw caught;
      if (caught instanceof ApiError) return { parsed, first, outcome: { error: caught } };
      // Not the line's fault as far as anyone can tell: logged, and the line fails rather than the import sticking on it.
      run.log.warn({ err: caught, importId: run.importId, line }, 'import: a line failed unexpectedly');
      return { parsed, first, outcome: { error: new ApiError('INTERNAL_ERROR', 'The line could not be applied') } };
    }
  }

  return { apply, remember };
}
