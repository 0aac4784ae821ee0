/**
 * The simulated buyer over time (`supplyline sandbox simulate`): orders at a steady rate, and now and
 * then the buyer changes an earlier order (a quantity, its notes) or cancels it, each a write of the
 * sandbox like any other, so the integration sees them in its feed and at its webhooks. An order of
 * the run that the integration acknowledged and shipped in full is received (`deliveredAt`).
 */
import { setTimeout as wait } from 'node:timers/promises';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import { patchOrder } from '../orders/patch-service.ts';
import type { Order, UpdateOrderInput } from '../orders/schema.ts';
import type { Actor, WriteRunner } from '../write/runner.ts';
import { findArrivedOrders } from './repository.ts';
import { findSandbox } from './service.ts';
import { simulateOrders } from './simulation.ts';

export const SIMULATED_BUYER: Actor = { type: 'system', id: 'simulated-buyer', name: 'Simulated buyer' };

/** Of the orders made, the share the buyer changes later, and the share it cancels. */
const CHANGES = 0.2;
const CANCELS = 0.1;
/** How many of its latest orders the buyer waits for; older ones it no longer checks. */
const AWAITED = 1000;
/** A buyer's second thoughts come soon: within this many orders. */
const REMEMBERED = 5;

export interface SimulatedChange {
  kind: 'created' | 'changed' | 'cancelled' | 'received';
  order: Order;
}

export interface SimulatorSettings {
  writes: WriteRunner;
  ordersPerMinute: number;
  /** None: until `signal` aborts. */
  minutes?: number;
  signal?: AbortSignal;
  random?: () => number;
  /** Waits until the next order is due; tests pass one that moves their `clock` instead. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  clock?: () => number;
  onChange?: (change: SimulatedChange) => void;
}

const sleepFor = (ms: number, signal?: AbortSignal) =>
  wait(ms, undefined, { signal }).catch((error: unknown) => {
    if ((error as { name?: string }).name !== 'AbortError') throw error;
  });

export async function runSimulation(db: Db, sandboxId: string, settings: SimulatorSettings) {
  await findSandbox(db, sandboxId);
  const {
    writes,
    ordersPerMinute,
    signal,
    random = Math.random,
    sleep = sleepFor,
    clock = Date.now,
    onChange,
  } = settings;
  const scope = { businessId: sandboxId, actor: SIMULATED_BUYER };
  const total = settings.minutes === undefined ? Infinity : Math.max(1, Math.round(ordersPerMinute * settings.minutes));
  const interval = 60_000 / ordersPerMinute;
  const counts = { created: 0, changed: 0, cancelled: 0, received: 0 };
  const awaited = new Set<string>();
  let pending: Array<{ order: Order; at: number }> = [];
  let due = clock();
  for (let n = 0; n < total && !signal?.aborted; n++) {
    const [order] = await writes.run(scope, (ctx) => simulateOrders(ctx, { count: 1 }, random));
    counts.created++;
    awaited.add(order.id);
    if (awaited.size > AWAITED) awaited.delete(awaited.values().next().value!);
    onChange?.({ kind: 'created', order });
    for (const id of await findArrivedOrders(db, sandboxId, [...awaited])) {
      awaited.delete(id);
      const received = await writes.run(scope, (ctx) =>
        patchOrder(ctx, id, { order: { deliveredAt: ctx.now, status: 'DELIVERED' } }, undefined),
      );
      counts.received++;
      onChange?.({ kind: 'received', order: received.resource });
    }
    if (random() < CHANGES + CANCELS) pending.push({ order, at: n + 1 + Math.floor(random() * REMEMBERED) });
    const last = n === total - 1;
    const now = pending.filter((p) => last || p.at <= n);
    pending = pending.filter((p) => !now.includes(p));
    for (const { order: earlier } of now) {
      const kind = random() < CANCELS / (CHANGES + CANCELS) ? 'cancelled' : 'changed';
      const changed = await writes
        .run(scope, (ctx) => patchOrder(ctx, earlier.id, secondThoughts(earlier, kind, random), undefined))
        .catch((error: unknown) => {
          // The integration may have deleted it meanwhile: the buyer lets it be.
          if (error instanceof ApiError && error.status === 404) return null;
          throw error;
        });
      if (changed) {
        counts[kind]++;
        onChange?.({ kind, order: changed.resource });
      }
    }
    due += interval;
    if (n < total - 1) await sleep(Math.max(0, due - clock()), signal);
  }
  return counts;
}

function secondThoughts(order: Order, kind: 'changed' | 'cancelled', random: () => number): UpdateOrderInput {
  if (kind === 'cancelled') return { order: { phase: 'CANCELLED', notes: 'Cancelled by the buyer' } };
  const line = order.orderItems[Math.floor(random() * order.orderItems.length)];
  return {
    order: { notes: 'Changed by the buyer' },
    updateOrderItems: [{ id: line.id, quantity: Number(line.quantity) + 1 + Math.floor(random() * 5) }],
  };
}
