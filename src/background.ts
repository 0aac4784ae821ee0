/**
 * What an instance does besides answering requests (registered in src/jobs.ts): webhook sender, importer,
 * sandboxes' simulations, retention jobs.
 */
import type { Kysely } from 'kysely';
import type { Counter, Registry } from 'prom-client';
import type { Config } from './config.ts';
import type { Database } from './db/types.ts';
import type { EventBus } from './events/bus.ts';
import { purgeEventsBefore } from './log/events.ts';
import { AUDIT_RETENTION_DAYS, purgeAuditEventsBefore } from './log/audit.ts';
import { IMPORT_RETENTION_DAYS, purgeImportsBefore } from './imports/repository.ts';
import { createImportWorker } from './imports/worker.ts';
import { createSimulationWorker } from './sandbox/worker.ts';
import { createJobs, type Jobs } from './jobs.ts';
import type { SecretBox } from './lib/secret-box.ts';
import { purgeDeliveriesBefore } from './webhooks/queue.ts';
import { createWebhookWorker, registerWebhookGauges } from './webhooks/worker.ts';
import { purgeExpiredIdempotencyKeys } from './write/idempotency-records.ts';
import type { WriteRunner } from './write/runner.ts';

/** How long finished webhook deliveries and their attempts are kept. */
const DELIVERY_LOG_DAYS = 30;
const HOUR = 60 * 60_000;
const DAY = 86_400_000;

export interface BackgroundDeps {
  db: Kysely<Database>;
  writes: WriteRunner;
  config: Config;
  box: SecretBox;
  events: EventBus;
  clock: () => number;
  log: Parameters<typeof createWebhookWorker>[0]['log'];
  registry: Registry;
  importLines: Counter;
  /** Whether API requests arrive (src/http/traffic.ts), for the importer's batch time. */
  requestsArrive: () => boolean;
}

export interface Background {
  jobs: Jobs;
  /** Wakes the webhook sender or importer after a write that gave them work. */
  kickWebhooks(): void;
  kickImports(): void;
}

export function createBackground(deps: BackgroundDeps): Background {
  const { db, writes, config, clock, log } = deps;
  const before = (days: number) => new Date(clock() - days * DAY).toISOString();
  const jobs = createJobs(log);

  const webhooks = createWebhookWorker({
    db,
    writes,
    config: config.webhooks,
    box: deps.box,
    events: deps.events,
    clock,
    log,
    registry: deps.registry,
  });
  registerWebhookGauges(deps.registry, db, clock);
  if (config.webhooks.workers) jobs.addWorker({ name: 'webhooks', start: webhooks.start, stop: () => webhooks.stop() });
  const importer = createImportWorker({
    db,
    writes,
    clock,
    concurrency: config.imports.concurrency,
    leaseMs: config.imports.leaseMs,
    log,
    lines: deps.importLines,
    requestsArrive: deps.requestsArrive,
  });
  jobs.addWorker({ name: 'imports', start: importer.start, stop: importer.stop });
  const simulations = createSimulationWorker({ db, writes, clock, log });
  jobs.addWorker({ name: 'simulations', start: simulations.start, stop: simulations.stop });

  jobs.add({
    name: 'idempotency-purge',
    everyMs: 10 * 60_000,
    run: () => purgeExpiredIdempotencyKeys(db, new Date(clock())),
  });
  jobs.add({
    name: 'event-retention',
    everyMs: HOUR,
    run: () => purgeEventsBefore(db, before(config.eventRetentionDays)),
  });
  jobs.add({
    name: 'webhook-log-retention',
    everyMs: HOUR,
    run: () => purgeDeliveriesBefore(db, before(DELIVERY_LOG_DAYS)),
  });
  jobs.add({
    name: 'audit-retention',
    everyMs: HOUR,
    run: () => purgeAuditEventsBefore(db, before(AUDIT_RETENTION_DAYS)),
  });
  jobs.add({
    name: 'import-retention',
    everyMs: HOUR,
    run: () => purgeImportsBefore(db, before(IMPORT_RETENTION_DAYS), clock()),
  });

  return { jobs, kickWebhooks: webhooks.kick, kickImports: importer.kick };
}
