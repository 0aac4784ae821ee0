import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { createApp, loggerOptions } from './app.ts';
import { countBusinesses } from './businesses/repository.ts';
import { createBusiness } from './businesses/service.ts';
import { isUniqueViolation } from './db/dialect.ts';
import { ApiError } from './lib/errors.ts';
import { newId } from './lib/ids.ts';
import { createWriteRunner, SYSTEM } from './write/runner.ts';
import { createUser } from './users/service.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { applyHeapGrowth, createRateLimits, openDatabase, resolveSecretBox } from './runtime.ts';
import { EventBus } from './events/bus.ts';
import { listenIfShared } from './db/listen.ts';
import { EVENTS_CHANNEL } from './write/runner.ts';
import { HEARTBEAT_MS, registerInstance } from './db/instances.ts';
import { RELEASE } from './db/migrate.ts';
import { flushTraces } from './telemetry/spans.ts';

function loadOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
}

async function main() {
  const config = loadOrExit();
  applyHeapGrowth(config.heapGrowingPercent);
  // SQLite: the WAL is checkpointed off the request path (src/db/sqlite-checkpointer.ts).
  const handle = await openDatabase(config, {
    backgroundCheckpoints: {
      onError: (error) =>
        console.error(`SQLite checkpoint thread stopped (${error.message}): the main connection checkpoints again`),
    },
  });
  const { db } = handle;
  // Registered, so that a later release's migration that cannot run beside this one waits for it to stop.
  const registration = await registerInstance(db, RELEASE);
  const heartbeat = setInterval(() => {
    registration.heartbeat().catch((error) => console.error(`instance heartbeat failed: ${(error as Error).message}`));
  }, HEARTBEAT_MS).unref();
  const logger = loggerOptions(config.logLevel);
  const limits = createRateLimits(config, (error) =>
    console.error(`rate limit store error: ${(error as Error).message}`),
  );
  // Long polls wake on commits made through any instance: PostgreSQL tells every listener.
  const events = new EventBus();
  const listener = listenIfShared(
    handle.dialect,
    config.listenDatabaseUrl,
    EVENTS_CHANNEL,
    (payload) => events.hear(payload),
    () => events.wakeAll(),
    (message) => console.error(message),
  );
  // A replica taken out or put back is said on stderr, as the listener's troubles are.
  for (const replica of handle.replicas?.replicas ?? []) replica.report = (message) => console.error(message);
  const { box: secretBox } = resolveSecretBox(config);
  let closing = false;
  const app = await createApp({
    db,
    config,
    rateLimiter: limits.api,
    buckets: limits.buckets,
    logger,
    poolStats: handle.poolStats,
    replicas: handle.replicas,
    processMetrics: true,
    events,
    secretBox,
    lifecycle: { draining: () => closing },
  });

  // Handlers go in before listening, so a signal that arrives right after start is still graceful.
  const shutdown = async (signal: string) => {
    if (closing) return;
    // /readyz fails from now on; with SHUTDOWN_DRAIN_MS the instance goes on serving meanwhile, so
    // the load balancer stops sending it requests before it stops taking them.
    closing = true;
    if (signal === 'SIGTERM' && config.shutdownDrainMs > 0) {
      console.log(
        `SIGTERM received: /readyz fails; serving ${config.shutdownDrainMs} ms more while the load balancer drains this instance`,
      );
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
    }
    console.log(`${signal} received: finishing in-flight requests, then closing the database`);
    // Orchestrators kill after 30 s; exit on our own terms well before, whatever is still open.
    setTimeout(() => {
      console.error(`shutdown took longer than ${config.shutdownTimeoutMs} ms: closing the remaining connections`);
      app.server.closeAllConnections();
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    try {
      // One turn of the event loop first: requests whose bytes arrived with the signal are parsed,
      // so their connections are no longer idle when the idle ones are closed.
      await nextTurn();
      await app.close();
      clearInterval(heartbeat);
      await registration.leave();
      await listener?.close();
      await limits.close();
      await handle.close();
      // Spans still buffered for the collector (src/telemetry): none without tracing.
      await flushTraces().catch((error) =>
        console.error(
          `traces were not sent: ${(error as Error | undefined)?.message ?? 'the collector did not take them'}`,
        ),
      );
      process.exit(0);
    } catch (error) {
      console.error(`shutdown failed: ${(error as Error).message}`);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  const { port } = app.server.address() as AddressInfo;
  // A first start on an empty database gets a demo business, so that curl works straight away.
  // It is made only once listening succeeded, so its key is never created without being shown.
  const seeded = (await countBusinesses(db)) === 0 ? await seedDemo(db) : null;
  const demo = seeded?.business;
  const demoOwner = seeded?.owner;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  if (demo) {
    console.log(
      [
        '',
        'Created a demo business. The API key is shown only this once:',
        `  X-Business-Id: ${demo.businessId}`,
        `  X-API-Key:     ${demo.apiKey}`,
        '',
        'Try it:',
        `  curl -s ${base}/api/v1/items -H 'X-Business-Id: ${demo.businessId}' -H 'X-API-Key: ${demo.apiKey}'`,
        '',
        `The console (API keys, team) is at ${base}/console, also shown only this once:`,
        `  email:    ${demoOwner!.user.email}`,
        `  password: ${demoOwner!.password}`,
        '',
      ].join('\n'),
    );
  }
  console.log(`Supplyline is listening on ${base} (database ${handle.describe}); API docs at ${base}/docs`);
}

/**
 * The demo business and an owner for its console (whose password is shown with the key), in one
 * write. Instances started together on an empty database all try; the owner's email is unique, so
 * one write commits and the others roll back whole: one demo, shown by the instance that made it.
 */
async function seedDemo(db: Parameters<typeof createWriteRunner>[0]) {
  try {
    return await createWriteRunner(db).run({ businessId: newId('bus'), actor: SYSTEM }, async (ctx) => ({
      business: await createBusiness(ctx, 'Demo Supplier'),
      owner: await createUser(ctx, { email: 'owner@demo.example', name: 'Demo Owner', role: 'owner' }),
    }));
  } catch (error) {
    if (isUniqueViolation(error) || (error instanceof ApiError && error.code === 'CONFLICT')) return null;
    throw error;
  }
}

main().catch((error) => {
  console.error(`Supplyline failed to start: ${(error as Error).message}`);
  process.exit(1);
});
