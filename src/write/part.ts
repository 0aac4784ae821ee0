import { type RawBuilder, sql } from 'kysely';
import { sendWrite, sentWritesDone } from '../db/pipeline.ts';
import type { NewEvent } from '../log/events.ts';
import { collectedSoFar } from './at-commit.ts';
import type { WriteContext } from './runner.ts';

/**
 * The write's transaction can no longer be trusted: a part of it failed, and undoing the part
 * failed too. The whole write must roll back.
 */
export class WriteBroken extends Error {
  constructor(cause: unknown) {
    super('A part of the write could not be undone', { cause });
  }
}

/**
 * Runs `work` as a part of the write `ctx` that fails, or is undone, on its own: in a savepoint, with
 * events that join the write's only when the part keeps its changes. A part that throws or runs with
 * `keep: false` (a dry run) is undone; the write goes on. Bulk import applies each line of a batch
 * this way.
 */
export async function runPart<T>(
  ctx: WriteContext,
  work: (ctx: WriteContext) => Promise<T>,
  options: { keep: boolean } = { keep: true },
): Promise<{ result: T; kept: boolean }> {
  const events: NewEvent[] = [];
  // What a group collects for its COMMIT (decision 0070) is undone with the part too.
  const collected = collectedSoFar(ctx.trx);
  const before = collected?.length ?? 0;
  const dropCollected = () => {
    if (collected) collected.length = before;
  };

  // The savepoint and its release travel with the statements around them (src/db/pipeline.ts). Its
  // own name: were an earlier part's release to fail unseen, this part's undo fails, not undoes that part.
  const savepoint = sql.id(`part_${(parts = (parts + 1) % 1_000_000)}`);
  await sendWrite(ctx.trx, sql`savepoint ${savepoint}`);
  let result: T;
  try {
    result = await work({
      ...ctx,
      emit: (event) => {
        events.push(event);
      },
    });
    // A write it sent ahead that failed fails the part, not the next one.
    await sentWritesDone(ctx.trx);
  } catch (error) {
    await undo(ctx, savepoint);
    dropCollected();
    throw error;
  }
  if (!options.keep) {
    await undo(ctx, savepoint);
    dropCollected();
    return { result, kept: false };
  }
  await sendWrite(ctx.trx, sql`release savepoint ${savepoint}`);
  for (const event of events) ctx.emit(event);
  return { result, kept: true };
}

/** Savepoints' names are numbered: see runPart. */
let parts = 0;

async function undo(ctx: WriteContext, savepoint: RawBuilder<unknown>): Promise<void> {
  try {
    // What the part sent ahead is undone with it; a failure among them is why, or moot.
    await sentWritesDone(ctx.trx).catch(() => {});
    await sql`rollback to savepoint ${savepoint}`.execute(ctx.trx);
    await sql`release savepoint ${savepoint}`.execute(ctx.trx);
  } catch (error) {
    throw new WriteBroken(error);
  }
}
