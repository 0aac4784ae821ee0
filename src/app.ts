import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import type { Database } from './db/types.ts';
import { snapshotsOf } from './db/connection.ts';
import type { OpenSnapshot } from './db/snapshot.ts';
import { apiKeyAuth, createAuthenticator } from './http/auth.ts';
import { registerConnectionHandling } from './http/connection.ts';
import { registerTurnGate } from './http/turns.ts';
import { ArrivingRequests, registerArrivals } from './http/traffic.ts';
import { registerJsonBody } from './http/json-body.ts';
import { createErrorHandler } from './http/error-handler.ts';
import { createRunWrite } from './http/write.ts';
import { registerMetrics, registerRequestLog, registerServiceMetrics, type PoolStats } from './http/metrics.ts';
import type { RouteDeps } from './http/types.ts';
import { registerDocs } from './http/openapi.ts';
import { registerCors } from './http/cors.ts';
import { registerHealth, type Lifecycle } from './http/health.ts';
import { registerReadRouting, registerReplicaMetrics } from './http/read-routing.ts';
import type { ReadReplicas } from './db/replicas/index.ts';
import { memoryBuckets, type BucketSettings, type Buckets, type RateLimiter } from './http/rate-limit.ts';
import { ErrorResponse } from './http/schema.ts';
import { validatorCompiler } from './lib/validation.ts';
import { answerNotFound, fastifyOptions, registerRequestBasics } from './http/server-options.ts';
import { Cursors } from './http/cursor.ts';
import { itemRoutes } from './items/routes.ts';
import { buyerRoutes } from './buyers/routes.ts';
import { pricingRoutes } from './pricing/routes.ts';
import { orderRoutes } from './orders/routes.ts';
import { DEFAULT_LIST_TUNING, type ListTuning } from './orders/read-model/index.ts';
import { invoiceRoutes } from './invoices/routes.ts';
import { acknowledgementRoutes } from './fulfilment/acknowledgement-routes.ts';
import { shipmentRoutes } from './fulfilment/shipment-routes.ts';
import { eventRoutes } from './events/routes.ts';
import { commitHeads } from './log/filter.ts';
import { EventBus } from './events/bus.ts';
import { RenderCache } from './lib/render-cache.ts';
import { SecretBox } from './lib/secret-box.ts';
import { createWriteRunner, type WriteRunner } from './write/runner.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { auditRoutes } from './audit/routes.ts';
import { importRoutes } from './imports/routes.ts';
import { RefusalSampler, recordRefusal, type Refusal } from './log/audit.ts';
import { consoleRoutes } from './console/routes.ts';
import { sandboxRoutes } from './sandbox/routes.ts';
import { createBackground } from './background.ts';

export { loggerOptions } from './http/server-options.ts';

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
  /** The order list plan's size thresholds; tests take the plans they test with them. */
  orderListTuning?: ListTuning;
  /** Streaming replicas the API's and the console's reads may use (DATABASE_REPLICA_URLS; src/db/replicas). */
  replicas?: ReadReplicas;
}

export type App = FastifyInstance;

/** The composition root: every plugin, route and piece of background work, registered in one readable block. */
export async function createApp(deps: AppDeps) {
  const { db, config, rateLimiter, replicas } = deps;
  // What routes read through: the primary, or with replicas the database each read chooses.
  const readDb = replicas?.db ?? db;
  const clock = deps.clock ?? Date.now;
  const errorHandler = createErrorHandler(config.bodyLimitBytes);
  const app = Fastify(fastifyOptions(config, deps.logger, errorHandler)).withTypeProvider<TypeBoxTypeProvider>();

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
  registerRequestBasics(app);
  await registerDocs(app);
  registerHealth(app, db, deps.lifecycle, replicas);
  if (replicas) registerReplicaMetrics(registry, replicas);

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
  const arrivals = new ArrivingRequests();
  const background = createBackground({
    db,
    writes,
    config,
    box,
    events,
    clock,
    log: app.log,
    registry,
    importLines: meters.importLines,
    requestsArrive: () => arrivals.arrive(),
  });
  const webhookSecrets = { box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks };
  const routeDeps: RouteDeps = {
    db: readDb,
    runWrite: createRunWrite(writes),
    events,
    openSnapshot: deps.openSnapshot ?? (() => snapshotsOf(readDb)()),
    orderCache,
    cursors: new Cursors(box),
    orderListTuning: deps.orderListTuning ?? DEFAULT_LIST_TUNING,
  };
  const bucket: BucketSettings = { ratePerSecond: config.rateLimitRps, burst: config.rateLimitBurst };
  const authenticator = createAuthenticator(db, config.authCacheMs, clock);
  const refusals = new RefusalSampler(clock);
  await app.register(
    async (api) => {
      // A refusal is noted in the audit trail after the answer is on its way; a failure to note it is only logged.
      const refused = (r: Refusal) => {
        const reason = refusals.take(r.businessId, r.reason);
        if (reason === null) return;
        recordRefusal(db, { ...r, reason }, new Date(clock()).toISOString()).catch((err) =>
          app.log.warn({ err }, 'audit: a refusal was not recorded'),
        );
      };
      registerArrivals(api, arrivals, '/api/v1');
      await api.register(apiKeyAuth, { authenticator, rateLimiter, bucket, refused });
      registerReadRouting(api, replicas);
      // The API's own 404 handler, so that its hooks (authentication first) run for unknown paths too.
      api.setNotFoundHandler(answerNotFound);
      await itemRoutes(api, routeDeps);
      await buyerRoutes(api, routeDeps);
      await pricingRoutes(api, routeDeps);
      await orderRoutes(api, routeDeps);
      await invoiceRoutes(api, routeDeps);
      await acknowledgementRoutes(api, routeDeps);
      await shipmentRoutes(api, routeDeps);
      await sandboxRoutes(api, routeDeps);
      await eventRoutes(api, routeDeps);
      await auditRoutes(api, routeDeps);
      // In a scope of its own: the NDJSON body parser is the import route's alone.
      await api.register(async (scope) =>
        importRoutes(scope, { ...routeDeps, clock, maxBytes: config.imports.maxBytes, kick: background.kickImports }),
      );
      await webhookRoutes(api, { ...routeDeps, clock, kick: background.kickWebhooks, webhooks: webhookSecrets });
    },
    { prefix: '/api/v1' },
  );

  // The supplier console: its own scope, with session cookies instead of API keys.
  await app.register(async (scope) => {
    registerReadRouting(scope, replicas);
    await consoleRoutes(scope, {
      db: readDb,
      writes,
      clock,
      buckets: deps.buckets ?? memoryBuckets(clock),
      secureCookie: config.consoleCookieSecure,
      kickWebhooks: background.kickWebhooks,
      webhooks: webhookSecrets,
      sandboxesPerBusiness: config.sandboxesPerBusiness,
      sandboxAcknowledgeMs: config.sandboxAcknowledgeMs,
    });
  });

  app.addHook('onReady', async () => {
    replicas?.start();
    background.jobs.start();
  });
  // Long polls answer at once when the server stops, rather than hold the shutdown; then background work stops, awaited.
  app.addHook('preClose', async () => {
    events.close();
    await background.jobs.stop();
  });
  return app;
}
