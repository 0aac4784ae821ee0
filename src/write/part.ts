import { sql } from 'kysely';
import type { NewEvent } from '../log/events.ts';
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
  await sql`savepoint part`.execute(ctx.trx);
  let result: T;
  try {
    result = await work({
      ...ctx,
      emit: (event) => {
        events.push(event);
      },
    });
  } catch (error) {
    await undo(ctx);
    throw error;
  }
  if (!options.keep) {
    await undo(ctx);
    return { result, kept: false };
  }
  await sql`release savepoint part`.execute(ctx.trx);
  for (const event of events) ctx.emit(event);
  return { result, kept: true };
}

async function undo(ctx: WriteContext): Promise<void> {
  try {
    await sql`rollback to savepoint part`.execute(ctx.trx);
    await sql`release savepoint part`.execute(ctx.trx);
  } catch (error) {
    throw new WriteBroken(error);
  }
}
