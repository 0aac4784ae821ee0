import type { FastifyInstance } from 'fastify';

/**
 * How many requests start in one turn of the event loop. libuv (1.45 and later, so Node 20 and
 * later) accepts one new connection per turn. On SQLite a request runs to its end in the turn that
 * read it, so with many busy keep-alive connections one turn served a request from each, and a new
 * connection waited in the kernel's queue one long turn per connection ahead of it, past a client's
 * timeout. With at most REQUESTS_PER_TURN starting per turn, turns stay short and new connections
 * get in (docs/decisions/).
 */
export const REQUESTS_PER_TURN = 8;

export interface TurnGate {
  /** Runs `start` now when this turn has room, otherwise in a later turn, in arrival order. */
  admit(start: () => void): void;
  /** Requests waiting for a turn. */
  readonly waiting: number;
}

/** `defer` runs its callback in the event loop's next check phase (tests pass their own). */
export function createTurnGate(
  perTurn = REQUESTS_PER_TURN,
  defer: (next: () => void) => void = setImmediate,
): TurnGate {
  let started = 0;
  let scheduled = false;
  // A queue as an array with a moving head: shift() would copy the array for each request.
  let queue: Array<() => void> = [];
  let head = 0;

  // Runs in the check phase, after the poll phase that read the requests: the counter starts
  // again, and the oldest waiting requests take this turn's room.
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
    // Requests started here count against the next poll phase; an idle server schedules nothing.
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

/** Every request passes the gate first, before any other hook runs. */
export function registerTurnGate(app: FastifyInstance, gate: TurnGate = createTurnGate()): void {
  app.addHook('onRequest', (_request, _reply, done) => gate.admit(done));
}
