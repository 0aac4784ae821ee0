import type { FastifyInstance } from 'fastify';

/**
 * How many requests start per event-loop turn. libuv accepts one new connection per turn, and on
 * SQLite a request runs to its end in the turn that read it: with many busy keep-alive connections,
 * a new one waited past a client's timeout. A cap keeps turns short (docs/decisions/).
 */
export const REQUESTS_PER_TURN = 8;

export interface TurnGate {
  /** Runs `start` now when the turn has room, else later, in arrival order. */
  admit(start: () => void): void;
  readonly waiting: number;
}

/** `defer` runs its callback in the next check phase (tests pass their own). */
export function createTurnGate(
  perTurn = REQUESTS_PER_TURN,
  defer: (next: () => void) => void = setImmediate,
): TurnGate {
  let started = 0;
  let scheduled = false;
  // A moving head: shift() would copy the array per request.
  let queue: Array<() => void> = [];
  let head = 0;

  // The check phase follows the poll phase that read the requests: the count restarts, oldest first.
  const turn = () => {
    scheduled = false;
    started = 0;
    while (started < perTurn && head < queue.length) {
      const start = queue[head]!;
      queue[head++] = undefined as never;
      started++;
      start();
    }
    if (head === queue.length) {
      queue = [];
      head = 0;
    }
    // These count against the next poll phase; an idle server schedules nothing.
    if (started > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    defer(turn);
  };

  return {
    admit(start) {
      schedule();
      if (head === queue.length && started < perTurn) {
        started++;
        start();
      } else {
        queue.push(start);
      }
    },
    get waiting() {
      return queue.length - head;
    },
  };
}

export function registerTurnGate(app: FastifyInstance, gate: TurnGate = createTurnGate()): void {
  app.addHook('onRequest', (_request, _reply, done) => gate.admit(done));
}
