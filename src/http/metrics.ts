import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { requestTraceFields } from '../telemetry/spans.ts';

/** PostgreSQL only: SQLite has one connection. */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
  /** Statements sent while none was in flight on their connection, since the start (pg-prepared.ts). */
  roundTrips: number;
  /** Queries sent, each a message (a simple query of several statements is one), since the start. */
  statements: number;
}

export interface MetricsOptions {
  poolStats?: () => PoolStats | null;
  processMetrics?: boolean;
  /** When set, a scrape needs `Authorization: Bearer <token>`. */
  token?: string | null;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (\S+)$/i.exec(header ?? '')?.[1] ?? '';
  return timingSafeEqual(digest(given), digest(token));
}

/** Unmatched requests share one label, so scanners cannot multiply the series. */
const UNMATCHED = 'unmatched';

const routeOf = (request: { routeOptions: { url?: string } }) => request.routeOptions.url ?? UNMATCHED;

/** `GET /metrics` from the app's own registry, so apps in one process (tests) never clash. */
export function registerMetrics(app: FastifyInstance, options: MetricsOptions = {}): Registry {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });

  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'supplyline_http_requests_total',
    help: 'HTTP requests answered, by route pattern and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'supplyline_http_request_duration_seconds',
    help: 'Time from request received to response sent, by route pattern and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'supplyline_rate_limit_rejections_total',
    help: 'Requests refused with 429 by the token bucket',
    labelNames: ['route'],
    registers: [registry],
  });
  const replays = new Counter({
    name: 'supplyline_idempotent_replays_total',
    help: 'Responses replayed from a stored Idempotency-Key record',
    labelNames: ['route'],
    registers: [registry],
  });
  const pool = options.poolStats;
  new Gauge({
    name: 'supplyline_db_pool_connections',
    help: 'Database pool connections by state (PostgreSQL): total open, idle, max; waiting = queued acquirers',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const stats = pool?.();
      if (!stats) return;
      for (const state of ['total', 'idle', 'waiting', 'max'] as const) this.set({ state }, stats[state]);
      this.set({ state: 'in_use' }, stats.total - stats.idle);
    },
  });
  // SQLite waits on nothing: these counters are PostgreSQL's alone.
  const poolCounter = (name: string, help: string, read: (stats: PoolStats) => number) => {
    let counted = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const stats = pool?.();
        if (!stats) return;
        this.inc(read(stats) - counted);
        counted = read(stats);
      },
    });
  };
  if (pool) {
    poolCounter(
      'supplyline_db_round_trips_total',
      'Times the process waited on the primary (PostgreSQL): statements sent while none was in flight on their connection',
      (stats) => stats.roundTrips,
    );
    poolCounter(
      'supplyline_db_statements_total',
      'Queries sent to the primary (PostgreSQL), each one message: those sent behind another included',
      (stats) => stats.statements,
    );
  }

  // onSend sees the handler's headers, including a replay's `idempotent-replayed`.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.getHeader('idempotent-replayed') === 'true') replays.inc({ route: routeOf(request) });
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: routeOf(request), status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) rateLimited.inc({ route: labels.route });
    done();
  });

  const token = options.token ?? null;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (token !== null && !bearerMatches(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw new ApiError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
    }
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
  return registry;
}

export function registerServiceMetrics(
  registry: Registry,
  sources: { longPolls: () => number; responseCache: { size: number; entries: number } },
) {
  new Gauge({
    name: 'supplyline_feed_long_polls_waiting',
    help: 'Long polls of the event feed now waiting on this instance',
    registers: [registry],
    collect() {
      this.set(sources.longPolls());
    },
  });
  new Gauge({
    name: 'supplyline_response_cache_bytes',
    help:
      'Bytes the response cache keeps alive: rendered orders, their keys ' +
      "and an estimate of each entry's overhead (at most RESPONSE_CACHE_MB)",
    registers: [registry],
    collect() {
      this.set(sources.responseCache.size);
    },
  });
  new Gauge({
    name: 'supplyline_response_cache_entries',
    help: 'Rendered orders the response cache holds',
    registers: [registry],
    collect() {
      this.set(sources.responseCache.entries);
    },
  });
  return {
    lockWaiting: new Gauge({
      name: 'supplyline_write_lock_waiting',
      help: "Write transactions of this instance now waiting for their business's write lock",
      registers: [registry],
    }),
    lockWait: new Histogram({
      name: 'supplyline_write_lock_wait_seconds',
      help: "How long each write transaction waited for its business's write lock",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    importLines: new Counter({
      name: 'supplyline_import_lines_total',
      help: 'Import lines this instance applied, by outcome (created, updated, unchanged, failed); its rate is lines per second',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}

/** One log line per request, at send: request id, business, method, route, path, status, latency; never headers, so never a key. */
export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        businessId: request.businessId || undefined,
        method: request.method,
        route: routeOf(request),
        path: request.url.split('?')[0],
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
        ...requestTraceFields(request),
      },
      'request completed',
    );
    done();
  });
}
