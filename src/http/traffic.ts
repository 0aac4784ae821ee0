import type { FastifyInstance } from 'fastify';

/** Requests that arrived within this long count as arriving. */
const RECENT_MS = 1000;

/**
 * Whether API requests arrive at this instance, for the import worker: every request (SQLite), or
 * every write of the business (PostgreSQL), waits for the batch in progress, and batches are half
 * as long while requests arrive (decision 0076). An import's own requests (a client polling its
 * progress) do not count, nor do health checks or the console.
 */
export class ArrivingRequests {
  #last = Number.NEGATIVE_INFINITY;
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  noteArrival(): void {
    this.#last = this.#now();
  }

  arrive(): boolean {
    return this.#now() - this.#last < RECENT_MS;
  }
}

/** Notes each request of `api` (the API's scope, `prefix`) but an import's. */
export function registerArrivals(api: FastifyInstance, arrivals: ArrivingRequests, prefix: string): void {
  const imports = `${prefix}/imports`;
  api.addHook('onRequest', (request, _reply, done) => {
    if (!request.url.startsWith(imports)) arrivals.noteArrival();
    done();
  });
}
