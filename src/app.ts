import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { Database } from './db/types.ts';
import { apiKeyAuth, createAuthenticator } from './http/auth.ts';
import { connectionOptions, registerConnectionHandling } from './http/connection.ts';
import { registerTurnGate } from './http/turns.ts';
import { registerJsonBody } from './http/json-body.ts';
import { checkQueryEncoding } from './http/query-encoding.ts';
import { createErrorHandler } from './http/error-handler.ts';
import { notFound } from './lib/errors.ts';
import { createRunWrite } from './http/write.ts';
import { registerMetrics, registerRequestLog, registerServiceMetrics, type PoolStats } from './http/metrics.ts';
import type { RouteDeps } from './http/types.ts';
import { registerDocs } from './http/openapi.ts';
import { registerCors } from './http/cors.ts';
import { registerHealth, type Lifecycle } from './http/health.ts';
import { activeTraceFields } from './telemetry/spans.ts';
import { memoryBuckets, type BucketSettings, type Buckets, type RateLimiter } from './http/rate-limit.ts';
import { ErrorResponse, NoQuery } from './http/schema.ts';
import { validatorCompiler } from './http/validation.ts';
import { itemRoutes } from './items/routes.ts';
import { buyerRoutes } from './buyers/routes.ts';
import { pricingRoutes } from './pricing/routes.ts';
import { orderRoutes } from './orders/routes.ts';
import { invoiceRoutes } from './invoices/routes.ts';
import { acknowledgementRoutes } from './fulfilment/acknowledgement-routes.ts';
import { shipmentRoutes } from './fulfilment/shipment-routes.ts';
import { eventRoutes } from './events/routes.ts';
import { commitHeads } from './events/filter.ts';
import { EventBus } from './events/bus.ts';
import { snapshotsOf } from './db/connection.ts';
import type { OpenSnapshot } from './db/snapshot.ts';
import { newId } from './lib/ids.ts';
import { RenderCache } from './lib/render-cache.ts';
import { purgeExpiredIdempotencyKeys } from './write/idempotency-records.ts';
import { createJobs } from './jobs.ts';
import { purgeEventsBefore } from './events/log.ts';
import { createWriteRunner, type WriteRunner } from './write/runner.ts';
import { SecretBox } from './lib/secret-box.ts';
import { Cursors } from './http/cursor.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { auditRoutes } from './audit/routes.ts';
import { importRoutes } from './imports/routes.ts';
import { createImportWorker } from './imports/worker.ts';
import { IMPORT_RETENTION_DAYS, purgeImportsBefore } from './imports/repository.ts';
import { AUDIT_RETENTION_DAYS, purgeAuditEventsBefore, recordRefusal, type Refusal } from './audit/repository.ts';
import { consoleRoutes } from './console/routes.ts';
import { createWebhookWorker, registerWebhookGauges } from './webhooks/worker.ts';
import { purgeDeliveriesBefore } from './webhooks/queue.ts';
import { randomBytes } from 'node:crypto';
import type { Scope } from './businesses/scopes.ts';

/** Finished webhook deliveries and their attempts are kept this long. */
const DELIVERY_LOG_DAYS = 30;

declare module 'fastify' {
  interface FastifyRequest {
    businessId: string;
    /** The API key that authenticated the request: the actor of its writes. */
    apiKeyId: string;
    /** Its scopes (null: every scope); src/businesses/scopes.ts. */
    apiKeyScopes: Scope[] | null;
    /** The key lacks `margin:read`: its answers leave out cost fields (src/businesses/margin.ts). */
    hidesMargin: boolean;
  }
  interface FastifyContextConfig {
    /** Supplyline's own operation, marked `x-supplyline-extension` in the OpenAPI document. */
    extension?: boolean;
  }
}

export interface AppDeps {
  db: Kysely<Database>;
  config: Config;
  /** Null when RATE_LIMIT_RPS=0. */
  rateLimiter: RateLimiter | null;
  /** The console's sign-in and password throttles; in memory on `clock` unless given (the server's are in Redis when it has one). */
  buckets?: Buckets;
  logger?: FastifyServerOptions['logger'];
  clock?: () => number;
  /** The write runner; made from `db` and `clock` unless given (tests observe writes through it). */
  writes?: WriteRunner;
  /** Wakes long polls; the server feeds it from PostgreSQL's notifications too (src/server.ts). */
  events?: EventBus;
  /** Snapshots for exports; those of `db` when it came from createDatabase. */
  openSnapshot?: OpenSnapshot;
  /** Pool use for /metrics (PostgreSQL). */
  poolStats?: () => PoolStats | null;
  /** Adds process and Node.js metrics to /metrics; the server turns it on. */
  processMetrics?: boolean;
  /** Encrypts stored secrets; from SECRET_KEY, else the server's key file (src/runtime.ts), else a key for this process only. */
  secretBox?: SecretBox;
  /** Whether the instance is shutting down, for /readyz (src/server.ts). */
  lifecycle?: Lifecycle;
}

/**
 * pino options for the server: JSON lines at `level`, each with the trace and span it was written in
 * when tracing is on, and keys never written even if a header is logged.
 */
export function loggerOptions(level: string) {
  return {
    level,
    mixin: activeTraceFields,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]'],
      censor: '[redacted]',
    },
  };
}

export type App = FastifyInstance;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

async function answerNotFound(request: FastifyRequest): Promise<never> {
  throw notFound(`Route ${request.method} ${request.url.split('?')[0]} not found`);
}

/** The HTTP server's options: logging, limits and timeouts, request ids, and errors from the router answered like the rest. */
function fastifyOptions(deps: AppDeps, errorHandler: ReturnType<typeof createErrorHandler>): FastifyServerOptions {
  const { config } = deps;
  return {
    logger: deps.logger ?? false,
    // registerRequestLog writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    ...connectionOptions(config),
    // request.ip: the socket's address, or X-Forwarded-For's as far as the proxies TRUST_PROXY names.
    trustProxy: config.trustProxy ?? false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId('req');
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Errors raised by the router itself (bad URL encoding, overlong ids) get the same body as the rest.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      return errorHandler(error, request, reply);
    },
  };
}

export async function createApp(deps: AppDeps) {
  const { db, config, rateLimiter } = deps;
  const clock = deps.clock ?? Date.now;
  const errorHandler = createErrorHandler(config.bodyLimitBytes);
  const app = Fastify(fastifyOptions(deps, errorHandler)).withTypeProvider<TypeBoxTypeProvider>();

  // First of all hooks: a request waits for its turn before anything else is done for it.
  registerTurnGate(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler);
  registerJsonBody(app, config.bodyLimitBytes);
  registerConnectionHandling(app);
  registerRequestLog(app);
  const registry = registerMetrics(app, {
    poolStats: deps.poolStats,
    processMetrics: deps.processMetrics,
    token: config.metricsToken,
  });
  app.addSchema(ErrorResponse);
  // Before the API's authentication, so that a preflight (which carries no key) is answered.
  await registerCors(app, config.corsOrigins);

  const bucket: BucketSettings = { ratePerSecond: config.rateLimitRps, burst: config.rateLimitBurst };
  const authenticator = createAuthenticator(db, config.authCacheMs, clock);

  // Hooks whose work is synchronous take a callback: an async one costs every request two promises.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // Every route's query must decode; the API checks it already, after authentication (apiKeyAuth).
  app.addHook('preValidation', (request, _reply, done) => {
    checkQueryEncoding(request.url);
    done();
  });

  app.decorateRequest('businessId', '');
  app.decorateRequest('apiKeyId', '');
  app.decorateRequest('apiKeyScopes', null);
  app.decorateRequest('hidesMargin', false);
  app.setNotFoundHandler(answerNotFound);

  await registerDocs(app);
  registerHealth(app, db, deps.lifecycle);

  // Unknown query parameters are refused on every operation, as on lists, so a typo shows.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.schema && !route.schema.querystring) route.schema.querystring = NoQuery;
  });

  const events = deps.events ?? new EventBus();
  const orderCache = new RenderCache(config.responseCacheMb * 1024 * 1024);
  const meters = registerServiceMetrics(registry, { longPolls: () => events.waiting, responseCache: orderCache });
  const box = deps.secretBox ?? new SecretBox(config.secretKeys ?? [randomBytes(32)]);
  const writes =
    deps.writes ??
    createWriteRunner(db, {
      idempotencyTtlHours: config.idempotencyTtlHours,
      clock,
      onEvents: (id, written) => events.notify(id, commitHeads(written)),
      box,
      lockWaiting: meters.lockWaiting,
      lockWait: meters.lockWait,
    });
  const worker = createWebhookWorker({
    db,
    writes,
    config: config.webhooks,
    box,
    events,
    clock,
    log: app.log,
    registry,
  });
  registerWebhookGauges(registry, db, clock);
  const importer = createImportWorker({
    db,
    writes,
    clock,
    concurrency: config.imports.concurrency,
    leaseMs: config.imports.leaseMs,
    log: app.log,
    lines: meters.importLines,
  });
  // Long polls answer at once when the server stops, rather than hold the shutdown.
  app.addHook('preClose', async () => events.close());
  const routeDeps: RouteDeps = {
    db,
    runWrite: createRunWrite(writes),
    writes,
    events,
    openSnapshot: deps.openSnapshot ?? (() => snapshotsOf(db)()),
    orderCache,
    cursors: new Cursors(box),
  };
  await app.register(
    async (api) => {
      // A refusal is noted in the audit trail after the answer is on its way; a failure to note it is only logged.
      const refused = (r: Refusal) => {
        recordRefusal(db, r, new Date(clock()).toISOString()).catch((err) =>
          app.log.warn({ err }, 'audit: a refusal was not recorded'),
        );
      };
      await api.register(apiKeyAuth, { authenticator, rateLimiter, bucket, refused });
      // The API's own 404 handler, so that its hooks (authentication first) run for unknown paths too.
      api.setNotFoundHandler(answerNotFound);
      await itemRoutes(api, routeDeps);
      await buyerRoutes(api, routeDeps);
      await pricingRoutes(api, routeDeps);
      await orderRoutes(api, routeDeps);
      await invoiceRoutes(api, routeDeps);
      await acknowledgementRoutes(api, routeDeps);
      await shipmentRoutes(api, routeDeps);
      await eventRoutes(api, routeDeps);
      await auditRoutes(api, routeDeps);
      // In a scope of its own: the NDJSON body parser is the import route's alone.
      await api.register(async (scope) =>
        importRoutes(scope, { ...routeDeps, clock, maxBytes: config.imports.maxBytes, kick: importer.kick }),
      );
      await webhookRoutes(api, {
        ...routeDeps,
        clock,
        kick: worker.kick,
        webhooks: { box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks },
      });
    },
    { prefix: '/api/v1' },
  );

  // The supplier console: its own scope, with session cookies instead of API keys.
  await app.register(async (scope) =>
    consoleRoutes(scope, {
      db,
      writes,
      clock,
      buckets: deps.buckets ?? memoryBuckets(clock),
      secureCookie: config.consoleCookieSecure,
      kickWebhooks: worker.kick,
      webhooks: { box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks },
    }),
  );

  // Background jobs: started when the app is ready, stopped (and awaited) when it closes.
  const jobs = createJobs(app.log);
  jobs.add({
    name: 'idempotency-purge',
    everyMs: 10 * 60_000,
    run: () => purgeExpiredIdempotencyKeys(db, new Date(clock())),
  });
  jobs.add({
    name: 'event-retention',
    everyMs: 60 * 60_000,
    run: () => purgeEventsBefore(db, new Date(clock() - config.eventRetentionDays * 86_400_000).toISOString()),
  });
  jobs.add({
    name: 'webhook-log-retention',
    everyMs: 60 * 60_000,
    run: () => purgeDeliveriesBefore(db, new Date(clock() - DELIVERY_LOG_DAYS * 86_400_000).toISOString()),
  });
  jobs.add({
    name: 'audit-retention',
    everyMs: 60 * 60_000,
    run: () => purgeAuditEventsBefore(db, new Date(clock() - AUDIT_RETENTION_DAYS * 86_400_000).toISOString()),
  });
  jobs.add({
    name: 'import-retention',
    everyMs: 60 * 60_000,
    run: () => purgeImportsBefore(db, new Date(clock() - IMPORT_RETENTION_DAYS * 86_400_000).toISOString(), clock()),
  });
  app.addHook('onReady', async () => {
    jobs.start();
    if (config.webhooks.workers) worker.start();
    importer.start();
  });
  app.addHook('preClose', async () => {
    await Promise.all([worker.stop(), importer.stop()]);
  });
  app.addHook('onClose', async () => jobs.stop());

  return app;
}
