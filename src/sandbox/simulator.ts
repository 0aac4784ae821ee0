/**
 * The simulated buyer over time: a **run** (src/sandbox/runs.ts) orders at a steady rate, and now and
 * then the buyer changes an earlier order (a quantity up or down, its notes) or cancels it, each a
 * write of the sandbox like any other, so the integration sees them in its feed and at its webhooks.
 * An order of the run that the integration acknowledged and shipped in full is received
 * (`deliveredAt`). Each of these writes also records itself in the run, under the run's lease: the
 * console's runs are driven by one instance's worker (src/sandbox/worker.ts), the CLI's by the CLI.
 */
import { setTimeout as wait } from 'node:timers/promises';
import type { Db } from '../db/types.ts';
import { ApiError, conflict, validationError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { patchOrder } from '../orders/patch-service.ts';
import type { OrderItemRow } from '../orders/mapper.ts';
import { loadOneOrderItems } from '../orders/items-repository.ts';
import type { Order, UpdateOrderInput } from '../orders/schema.ts';
import type { Actor, WriteContext, WriteRunner } from '../write/runner.ts';
import {
  countRunning,
  endRun,
  findArrivedRunOrders,
  insertRun,
  insertRunOrder,
  plusOne,
  updateRun,
  type Held,
  type SecondThought,
  type SimulationCounts,
  type SimulationRun,
} from './runs.ts';
import { findSandbox } from './service.ts';
import { simulateOrders } from './simulation.ts';

export const SIMULATED_BUYER: Actor = { type: 'system', id: 'simulated-buyer', name: 'Simulated buyer' };

/** Of the orders made, the share the buyer changes later, and the share it cancels. */
const CHANGES = 0.2;
const CANCELS = 0.1;
/** A buyer's second thoughts come soon: within this many orders. */
const REMEMBERED = 5;
/** How long a driver holds a run past its last write; it renews the lease at a third of this while it waits. */
export const RUN_LEASE_MS = 15_000;
/** Runs of one sandbox running at once. */
export const MAX_RUNNING = 3;
export const MAX_ORDERS_PER_MINUTE = 6000;
/** The least: an order every 100 minutes (the time between two orders is kept in milliseconds, as an integer). */
export const MIN_ORDERS_PER_MINUTE = 0.01;
/** A week. */
export const MAX_MINUTES = 10_080;

export interface SimulatedChange {
  kind: 'created' | 'changed' | 'cancelled' | 'received';
  order: Order;
}

export interface DriveSettings {
  writes: WriteRunner;
  /** Who drives: an instance's worker, or the CLI. */
  owner: string;
  signal?: AbortSignal;
  random?: () => number;
  /** Waits until the next order is due; tests pass one that moves their `clock` instead. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  clock?: () => number;
  leaseMs?: number;
  onChange?: (change: SimulatedChange) => void;
}

const sleepFor = (ms: number, signal?: AbortSignal) =>
  wait(ms, undefined, { signal }).catch((error: unknown) => {
    if ((error as { name?: string }).name !== 'AbortError') throw error;
  });

const iso = (ms: number) => new Date(ms).toISOString();

export const ORDERS_PER_MINUTE_RULE =
  `Must be a number from ${MIN_ORDERS_PER_MINUTE} ` + `(an order every 100 minutes) to ${MAX_ORDERS_PER_MINUTE}`;
export const isOrdersPerMinute = (n: number) =>
  Number.isFinite(n) && n >= MIN_ORDERS_PER_MINUTE && n <= MAX_ORDERS_PER_MINUTE;

/** A run's rate and length, checked: from an order every 100 minutes to 6,000 a minute, at most a week. */
export function runPlan(ordersPerMinute: number, minutes: number | undefined) {
  if (!isOrdersPerMinute(ordersPerMinute)) throw validationError({ ordersPerMinute: ORDERS_PER_MINUTE_RULE });
  if (minutes !== undefined && !(Number.isFinite(minutes) && minutes > 0 && minutes <= MAX_MINUTES))
    throw validationError({ minutes: `Must be a number above 0, at most ${MAX_MINUTES} (a week)` });
  return {
    intervalMs: Math.max(10, Math.round(60_000 / ordersPerMinute)),
    total: minutes === undefined ? null : Math.max(1, Math.round(ordersPerMinute * minutes)),
  };
}

/** A new run of the sandbox, its first order due now; held by `lease` (the CLI) or free for any instance's worker. */
export async function startSimulation(
  db: Db,
  writes: WriteRunner,
  sandboxId: string,
  plan: { ordersPerMinute: number; minutes?: number; actor: Actor; now: number },
  lease?: { owner: string; until: string },
): Promise<SimulationRun> {
  const { intervalMs, total } = runPlan(plan.ordersPerMinute, plan.minutes);
  await findSandbox(db, sandboxId);
  // Counted under the sandbox's write lock, so the limit holds with any number of instances.
  return writes.run({ businessId: sandboxId, actor: plan.actor }, async (ctx) => {
    const running = await countRunning(ctx.trx, sandboxId);
    if (running >= MAX_RUNNING)
      throw conflict(`Sandbox ${sandboxId} has ${running} simulations running, the most it may have: stop one first`);
    return insertRun(
      ctx.trx,
      { id: newId('sim'), businessId: sandboxId, intervalMs, total, startedBy: plan.actor, now: iso(plan.now) },
      lease,
    );
  });
}

/** The run is no longer this driver's: stopped, ended, or taken over after its lease passed. */
class LostRun extends Error {}

/**
 * Drives a run held by `settings.owner` until it ends, is stopped, is lost, or `signal` aborts: the
 * run's counts then. Every step is a write that records itself in the run (`updateRun`).
 */
export async function driveRun(db: Db, run: SimulationRun, settings: DriveSettings): Promise<SimulationCounts> {
  const { writes, signal, random = Math.random, sleep = sleepFor, clock = Date.now, onChange } = settings;
  const leaseMs = settings.leaseMs ?? RUN_LEASE_MS;
  const held: Held = { id: run.id, owner: settings.owner };
  const scope = { businessId: run.sandboxId, actor: SIMULATED_BUYER };
  const counts = { ...run.counts };
  let pending = run.pending;
  let nextAt = Date.parse(run.nextAt);
  const lease = () => iso(clock() + leaseMs);
  const step = <T>(work: (ctx: WriteContext) => Promise<T>) => writes.run(scope, work);

  const more = () => run.total === null || counts.created < run.total;
  try {
    while (!signal?.aborted) {
      if (more()) {
        // Waits for the next order, renewing the lease while the wait is long.
        for (let left = nextAt - clock(); left > 0 && !signal?.aborted; ) {
          const part = Math.min(left, leaseMs / 3);
          await sleep(part, signal);
          left -= part;
          if (left > 0 && !signal?.aborted)
            await step(async (ctx) => {
              if (!(await updateRun(ctx.trx, held, { lease_until: lease() }))) throw new LostRun();
            });
        }
        if (signal?.aborted) break;
        const made = await step(async (ctx) => {
          const [order] = await simulateOrders(ctx, { count: 1 }, random);
          await insertRunOrder(ctx.trx, { businessId: run.sandboxId, runId: run.id, orderId: order.id, now: ctx.now });
          const thought: SecondThought[] =
            random() < CHANGES + CANCELS
              ? [
                  {
                    orderId: order.id,
                    at: counts.created + 1 + Math.floor(random() * REMEMBERED),
                    kind: random() < CANCELS / (CHANGES + CANCELS) ? 'cancelled' : 'changed',
                  },
                ]
              : [];
          const set = {
            created: counts.created + 1,
            next_at: iso(nextAt + run.intervalMs),
            pending: [...pending, ...thought],
          };
          const saved = { ...set, pending: JSON.stringify(set.pending), lease_until: lease() };
          if (!(await updateRun(ctx.trx, held, saved, counts.created))) throw new LostRun();
          return { order, set };
        });
        counts.created = made.set.created;
        pending = made.set.pending;
        nextAt += run.intervalMs;
        onChange?.({ kind: 'created', order: made.order });
      }
      await receiveArrived(db, run, held, step, lease, (order) => {
        counts.received++;
        onChange?.({ kind: 'received', order });
      });
      // The last order brings every second thought still to come.
      for (const thought of pending.filter((p) => !more() || p.at <= counts.created)) {
        const rest = pending.filter((p) => p !== thought);
        const changed = await step(async (ctx) => {
          const items = await loadOneOrderItems(ctx.trx, ctx.businessId, thought.orderId);
          const input = secondThoughts(thought.kind, items, random);
          const order = await patchOrder(ctx, thought.orderId, input, undefined).then(
            (written) => written.resource,
            (error: unknown) => {
              // The integration may have deleted it meanwhile: the buyer lets it be.
              if (error instanceof ApiError && error.status === 404) return null;
              throw error;
            },
          );
          const set = {
            pending: JSON.stringify(rest),
            lease_until: lease(),
            ...(order && { [thought.kind]: plusOne(thought.kind) }),
          };
          if (!(await updateRun(ctx.trx, held, set))) throw new LostRun();
          return order;
        });
        pending = rest;
        if (changed) {
          counts[thought.kind]++;
          onChange?.({ kind: thought.kind, order: changed });
        }
      }
      if (!more()) {
        await step(async (ctx) => {
          const set = { state: 'FINISHED', ended_at: ctx.now, lease_owner: null, lease_until: null };
          if (!(await updateRun(ctx.trx, held, set))) throw new LostRun();
        });
        break;
      }
    }
  } catch (error) {
    if (!(error instanceof LostRun)) throw error;
  }
  return counts;
}

/** Receives the run's orders that arrived, one write each. */
async function receiveArrived(
  db: Db,
  run: SimulationRun,
  held: Held,
  step: <T>(work: (ctx: WriteContext) => Promise<T>) => Promise<T>,
  lease: () => string,
  received: (order: Order) => void,
) {
  for (const id of await findArrivedRunOrders(db, run.sandboxId, run.id)) {
    const order = await step(async (ctx) => {
      const written = await patchOrder(ctx, id, { order: { deliveredAt: ctx.now, status: 'DELIVERED' } }, undefined);
      if (!(await updateRun(ctx.trx, held, { received: plusOne('received'), lease_until: lease() })))
        throw new LostRun();
      return written.resource;
    });
    received(order);
  }
}

/** A change (a line's quantity down by some when it can go down, else up, and a note) or a cancellation. */
function secondThoughts(kind: SecondThought['kind'], items: OrderItemRow[], random: () => number): UpdateOrderInput {
  if (kind === 'cancelled') return { order: { phase: 'CANCELLED', notes: 'Cancelled by the buyer' } };
  // Three draws whatever the order: a seeded run draws as many numbers for each change.
  const [which, down, by] = [random(), random(), random()];
  const line = items[Math.floor(which * items.length)];
  if (!line) return { order: { notes: 'Changed by the buyer' } };
  const quantity = Number(line.quantity);
  const fewer = quantity > 1 && down < 0.5;
  return {
    order: { notes: 'Changed by the buyer' },
    updateOrderItems: [
      { id: line.id, quantity: fewer ? 1 + Math.floor(by * (quantity - 1)) : quantity + 1 + Math.floor(by * 5) },
    ],
  };
}

/**
 * A run from start to end in this process (`supplyline sandbox simulate`, tests): started held by
 * `owner`, driven here, and stopped if `signal` aborts first. Its counts at the end.
 */
export async function runSimulation(
  db: Db,
  sandboxId: string,
  settings: Omit<DriveSettings, 'owner'> & {
    ordersPerMinute: number;
    minutes?: number;
    actor?: Actor;
    onStart?: (run: SimulationRun) => void;
  },
): Promise<SimulationCounts> {
  const clock = settings.clock ?? Date.now;
  const owner = `cli_${newId('sim')}`;
  const run = await startSimulation(
    db,
    settings.writes,
    sandboxId,
    {
      ordersPerMinute: settings.ordersPerMinute,
      minutes: settings.minutes,
      actor: settings.actor ?? SIMULATED_BUYER,
      now: clock(),
    },
    { owner, until: iso(clock() + (settings.leaseMs ?? RUN_LEASE_MS)) },
  );
  settings.onStart?.(run);
  const counts = await driveRun(db, run, { ...settings, owner });
  if (settings.signal?.aborted) await endRun(db, sandboxId, run.id, iso(clock()));
  return counts;
}
