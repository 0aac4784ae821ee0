import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  formatPosition,
  parsePosition,
  type Position,
  type Read,
  type ReadReplicas,
  type ReplicaStatus,
} from '../db/replicas/index.ts';
import { badRequest } from '../lib/errors.ts';

/** The header a client sends to read no older than a point it saw, and the one every answer names that point in. */
export const CONSISTENT_AFTER = 'consistent-after';
export const POSITION_HEADER = 'supplyline-position';

const SEQUENCE = /^\d{1,16}$/;

/**
 * `Consistent-After`: an event sequence of the business, or a `Supplyline-Position`. A sequence asks
 * for nothing more than every read gives (its event committed before the read began); a position
 * is a point the read must have, whichever database serves it. Undefined when it is neither.
 */
export function parseConsistentAfter(value: string): Position | null | undefined {
  if (SEQUENCE.test(value)) return null;
  return parsePosition(value) ?? undefined;
}

/**
 * The reads of a scope (the API, the console): GET and HEAD may be served by a replica that has
 * everything they must see (src/db/replicas); every answer names the position it is at least at.
 * Without replicas only `Consistent-After` is checked, so that a client gets the same answer from
 * every deployment.
 */
export function registerReadRouting(app: FastifyInstance, replicas: ReadReplicas | undefined): void {
  const readsOf = new WeakMap<FastifyRequest, Read>();
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return done();
    const header = request.headers[CONSISTENT_AFTER];
    let after: Position | null = null;
    if (header !== undefined) {
      const parsed = typeof header === 'string' ? parseConsistentAfter(header) : undefined;
      if (parsed === undefined)
        return done(
          badRequest('Consistent-After must be an event sequence or a Supplyline-Position value (e.g. 0/16B3740).'),
        );
      after = parsed;
    }
    if (!replicas) return done();
    // The handler, and every statement it sends, runs inside the read (AsyncLocalStorage).
    const read = replicas.newRead(after);
    readsOf.set(request, read);
    replicas.run(read, () => done());
  });
  if (!replicas) return;
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400) return payload;
    const read = readsOf.get(request);
    // A write's answer: a position after its commit, for the client to read its write back anywhere.
    const position = read ? read.position : await replicas.positionNow().catch(() => null);
    if (position !== null) reply.header(POSITION_HEADER, formatPosition(position));
    return payload;
  });
}

/** Reads by the database that served them, the routing decision's time, and each replica's state and lag. */
export function registerReplicaMetrics(registry: Registry, replicas: ReadReplicas): void {
  const reads = new Counter({
    name: 'supplyline_reads_total',
    help: 'Requests that read (GET, HEAD), by the database that served them: primary or replica',
    labelNames: ['target'],
    registers: [registry],
  });
  const choosing = new Histogram({
    name: 'supplyline_read_routing_seconds',
    help: "Time a read waited for its choice of database (the primary's position and the replicas' replay)",
    buckets: [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1],
    registers: [registry],
  });
  reads.inc({ target: 'primary' }, 0);
  reads.inc({ target: 'replica' }, 0);
  replicas.onChoice = (target, seconds) => {
    reads.inc({ target });
    choosing.observe(seconds);
  };
  const each = (name: string, help: string, value: (s: ReplicaStatus) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['replica'],
      registers: [registry],
      collect() {
        this.reset();
        for (const status of replicas.status()) {
          const v = value(status);
          if (v !== null) this.set({ replica: status.name }, v);
        }
      },
    });
  each('supplyline_replica_up', 'Whether reads may go to the replica (1) or it is taken out (0)', (s) =>
    s.state === 'up' ? 1 : 0,
  );
  each(
    'supplyline_replica_lag_bytes',
    "WAL the replica has yet to replay, behind the primary's position",
    (s) => s.lagBytes,
  );
  each(
    'supplyline_replica_lag_seconds',
    'Time since the last transaction the replica replayed, while it has more to replay',
    (s) => s.lagSeconds,
  );
}
