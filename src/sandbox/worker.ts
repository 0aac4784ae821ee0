/**
 * Drives the simulations started in the console, in every instance (src/background.ts): each running
 * run is taken by the one instance that claims its lease, driven there (src/sandbox/simulator.ts),
 * and taken over by another once the lease passes if that instance stops or dies. A run that cannot
 * go on (its sandbox has nothing to order, say) ends FAILED with the reason.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import type { WriteRunner } from '../write/runner.ts';
import { claimRun, pauseRun, releaseRuns } from './leases.ts';
import { endRun } from './runs.ts';
import { driveRun, RUN_LEASE_MS } from './simulator.ts';

/** How often an instance looks for runs to drive. */
const POLL_MS = 1000;

export interface SimulationWorkerDeps {
  db: Db;
  writes: WriteRunner;
  clock: () => number;
  log: { warn(details: object, message: string): void };
  leaseMs?: number;
  pollMs?: number;
}

export function createSimulationWorker(deps: SimulationWorkerDeps) {
  const { db, writes, clock, log } = deps;
  const leaseMs = deps.leaseMs ?? RUN_LEASE_MS;
  // The process id lets an operator (and the reliability check) tell which instance drives a run.
  const owner = `sw_${process.pid}_${randomBytes(6).toString('hex')}`;
  const running = new Map<string, { stop: AbortController; done: Promise<void> }>();
  const iso = (ms: number) => new Date(ms).toISOString();
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<void> | null = null;

  async function pass() {
    for (;;) {
      const now = clock();
      const run = await claimRun(db, owner, iso(now), iso(now + leaseMs), [...running.keys()]);
      if (!run || !timer) return;
      const stop = new AbortController();
      const done = driveRun(db, run, { writes, owner, signal: stop.signal, clock, leaseMs })
        .then(
          () => {},
          async (err: unknown) => {
            if (err instanceof ApiError && err.status < 500)
              await endRun(db, run.sandboxId, run.id, iso(clock()), err.message);
            else {
              log.warn({ err, runId: run.id }, 'simulation: a step failed; the run resumes when its lease passes');
              await pauseRun(db, { id: run.id, owner }, iso(clock() + leaseMs));
            }
          },
        )
        .catch((err: unknown) => log.warn({ err, runId: run.id }, 'simulation: a failed run was not recorded'))
        .finally(() => running.delete(run.id));
      running.set(run.id, { stop, done });
    }
  }

  const tick = () => {
    if (passing) return;
    passing = pass()
      .catch((err: unknown) => log.warn({ err }, 'simulation: looking for runs failed'))
      .finally(() => {
        passing = null;
      });
  };

  return {
    start() {
      if (timer) return;
      timer = setInterval(tick, deps.pollMs ?? POLL_MS);
      timer.unref();
      tick();
    },
    /** Stops driving, waits for the steps under way, and gives the runs up to the other instances at once. */
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await passing;
      for (const { stop } of running.values()) stop.abort();
      await Promise.all([...running.values()].map((r) => r.done));
      await releaseRuns(db, owner).catch((err: unknown) =>
        log.warn({ err }, 'simulation: leases not released; they pass on their own'),
      );
    },
  };
}
