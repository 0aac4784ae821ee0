import { setImmediate } from 'node:timers/promises';
import { insertApiKey, type CreatedKey } from '../businesses/repository.ts';
import type { Db } from '../db/types.ts';
import { conflict, notFound } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { copyConfiguration, type CopySettings } from './copy.ts';
import {
  findBusinessKind,
  insertSandboxBusiness,
  listSandboxes,
  returnSessionsToLive,
  type Sandbox,
} from './repository.ts';
import { stopRuns } from './runs.ts';
import { closeWrites, newClosedClock } from '../write/clock.ts';
import { businessTables, deleteBusinessRows, KEPT_ON_RESET } from './tables.ts';

export interface SandboxSettings extends CopySettings {
  /** SANDBOXES_PER_BUSINESS. */
  maxSandboxes: number;
  /** Told the new sandbox's id once it exists, before its copy (the CLI, to say what an interruption leaves). */
  onMade?: (sandboxId: string) => void;
}

/** What a sandbox whose copy has not finished answers a write. */
const creatingReason = (id: string) =>
  `Sandbox ${id} is being created: if its copy was interrupted, reset the sandbox to copy again, or delete it`;

export interface CreatedSandbox extends CreatedKey {
  sandbox: Sandbox;
  copied: Record<string, number>;
}

async function liveBusiness(db: Db, businessId: string) {
  const business = await findBusinessKind(db, businessId);
  if (!business) throw notFound(`Business ${businessId} not found`);
  if (business.live_business_id !== null)
    throw conflict(`Business ${businessId} is a sandbox; a sandbox is made from a live business`);
  return business;
}

export async function findSandbox(db: Db, sandboxId: string) {
  const business = await findBusinessKind(db, sandboxId);
  if (!business) throw notFound(`Sandbox ${sandboxId} not found`);
  if (business.live_business_id === null) throw conflict(`Business ${sandboxId} is live, not a sandbox`);
  return { id: business.id, name: business.name, liveBusinessId: business.live_business_id };
}

/**
 * A sandbox of a live business, with a test key and a copy of its configuration. The count is taken
 * and the sandbox made under the live business's write lock, so the limit holds with any number of
 * instances; the copy then runs under the sandbox's own.
 */
export async function createSandbox(
  db: Db,
  liveBusinessId: string,
  name: string | undefined,
  settings: SandboxSettings,
): Promise<CreatedSandbox> {
  const live = await liveBusiness(db, liveBusinessId);
  const sandbox = { id: newId('bus'), name: name ?? `${live.name} (sandbox)`, liveBusinessId };
  const key = await settings.writes.run({ businessId: liveBusinessId, actor: settings.actor }, async (ctx) => {
    const existing = await listSandboxes(ctx.trx, liveBusinessId);
    if (existing.length >= settings.maxSandboxes)
      throw conflict(
        `Business ${liveBusinessId} has ${existing.length} sandboxes, ` +
          `the most it may have (SANDBOXES_PER_BUSINESS=${settings.maxSandboxes})`,
      );
    await insertSandboxBusiness(ctx.trx, sandbox, ctx.now);
    // Closed until its copy is done: a copy cut short leaves it saying so, not looking complete.
    await newClosedClock(ctx.trx, sandbox.id, ctx.now, creatingReason(sandbox.id));
    return insertApiKey(ctx.trx, sandbox.id, ctx.now, { name: 'Sandbox key', createdBy: ctx.actor });
  });
  settings.onMade?.(sandbox.id);
  const copied = await copyConfiguration(db, liveBusinessId, sandbox.id, settings);
  await openSandbox(sandbox.id, settings);
  const [created] = (await listSandboxes(db, liveBusinessId)).filter((s) => s.id === sandbox.id);
  return { ...key, sandbox: created, copied };
}

/**
 * Empties the sandbox but for itself, its keys, users and counters, and copies the live configuration
 * again. The sandbox takes no other writes meanwhile: they are refused with a 409 that says so (an
 * integration still writing would otherwise put rows into tables already emptied), and taken again
 * once the copy is done. A reset that stopped halfway leaves it closed; reset it again.
 */
export async function resetSandbox(db: Db, sandboxId: string, settings: SandboxSettings) {
  const sandbox = await findSandbox(db, sandboxId);
  const scope = { businessId: sandboxId, actor: settings.actor, whileClosed: true };
  await settings.writes.run(scope, async (ctx) => {
    await closeWrites(ctx.trx, sandboxId, `Sandbox ${sandboxId} is being reset: try again once the reset is done`);
    await stopRuns(ctx.trx, sandboxId, ctx.now);
  });
  const removed = await emptySandbox(db, sandboxId, settings, KEPT_ON_RESET);
  const copied = await copyConfiguration(db, sandbox.liveBusinessId, sandboxId, settings);
  await openSandbox(sandboxId, settings);
  return { sandbox, removed, copied };
}

/** Takes writes again once a sandbox's copy is done (closed while it was created or reset). */
async function openSandbox(sandboxId: string, settings: CopySettings) {
  await settings.writes.run({ businessId: sandboxId, actor: settings.actor, whileClosed: true }, (ctx) =>
    closeWrites(ctx.trx, sandboxId, null),
  );
}

/**
 * Removes the sandbox and every row of it, in batches; the number of rows removed per table. Its
 * write clock stays, closed: a write sent meanwhile, or just after with its key still cached on an
 * instance, is refused with a 409, not half-made.
 */
export async function deleteSandbox(db: Db, sandboxId: string, settings: CopySettings) {
  const sandbox = await findSandbox(db, sandboxId);
  // Console sessions showing the sandbox go back to the live business rather than end with it.
  // Its simulations stop first, so that no order is made while the sandbox empties.
  await settings.writes.run({ businessId: sandboxId, actor: settings.actor, whileClosed: true }, async (ctx) => {
    await closeWrites(ctx.trx, sandboxId, `Sandbox ${sandboxId} is deleted`);
    await returnSessionsToLive(ctx.trx, sandboxId, sandbox.liveBusinessId);
    await stopRuns(ctx.trx, sandboxId, ctx.now);
  });
  const removed = await emptySandbox(db, sandboxId, settings, new Set(['write_clocks']));
  return { sandbox, removed };
}

/** The business row goes last, as every other table's rows name it. */
const LAST = ['businesses'];

async function emptySandbox(db: Db, sandboxId: string, settings: CopySettings, keep: Set<string>) {
  const batchSize = settings.batchSize ?? 2000;
  const tables = (await businessTables(db)).filter((t) => !keep.has(t.name));
  const removed: Record<string, number> = {};
  const scope = { businessId: sandboxId, actor: settings.actor, whileClosed: true };
  for (const table of tables.filter((t) => !LAST.includes(t.name))) {
    removed[table.name] = 0;
    for (;;) {
      const batch = await settings.writes.run(scope, (ctx) => deleteBusinessRows(ctx.trx, table, sandboxId, batchSize));
      removed[table.name] += batch;
      if (!table.hasId || batch < batchSize) break;
      // Live requests get their turn between batches (src/sandbox/copy.ts).
      await setImmediate();
    }
  }
  const last = tables.filter((t) => LAST.includes(t.name));
  if (last.length > 0)
    await settings.writes.run(scope, async (ctx) => {
      for (const table of last) removed[table.name] = await deleteBusinessRows(ctx.trx, table, sandboxId, 1);
    });
  return removed;
}
