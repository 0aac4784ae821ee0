import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import type { WebhookConfig } from '../config.ts';
import { createStatisticsRefresh } from '../db/statistics.ts';
import type { Database } from '../db/types.ts';
import type { EventBus } from '../events/bus.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { SYSTEM, type WriteContext, type WriteRunner } from '../write/runner.ts';
import { SpanStatusCode } from '@opentelemetry/api';
import { inAttemptSpan, untraced } from '../telemetry/spans.ts';
import { createOutcomeRecorder, outcomeOf } from './outcomes.ts';
import { createPayloadLoader, signedHeaders, type ClaimedEndpoint } from './payloads.ts';
import {
  claimDeliveries,
  ENDPOINT_HELD,
  nextDue,
  queueFromLog,
  queueFromReplay,
  queueWork,
  type Claim,
} from './queue.ts';
import { createSender } from './sender.ts';

export { registerWebhookGauges } from './gauges.ts';

export interface WorkerDeps {
  db: Kysely<Database>;
  writes: WriteRunner;
  config: WebhookConfig;
  box: SecretBox;
  events: EventBus;
  clock: () => number;
  log: FastifyBaseLogger;
  registry?: Registry;
}

/** Longest wait between looks at the queue: retries and other instances' lapsed leases are found so. */
const IDLE_MS = 1000;
const HELD_RETRY_MS = 20;

/**
 * Webhook delivery, in every server instance: one loop queues deliveries from the event log (woken
 * by commits through the EventBus), claims due ones under a lease, sends up to `concurrency` at a
 * time, and records outcomes in batches (outcomes.ts). Instances share the queue; a dead
 * instance's claims fall due again when their lease ends, so delivery is at least once.
 */
export function createWebhookWorker(deps: WorkerDeps) {
  const { db, writes, config, clock, log } = deps;
  const sender = createSender({ timeoutMs: config.timeoutMs, allowPrivateNetworks: config.allowPrivateNetworks });
  const payloads = createPayloadLoader(db, deps.box, (endpointId) =>
    log.error(
      { endpointId },
      "webhook worker: an endpoint's signing secret cannot be opened with SECRET_KEY; its deliveries wait",
    ),
  );
  // Longer than an attempt plus recording it; then a dead instance's claim falls due again.
  const leaseMs = 2 * config.timeoutMs + 5_000;
  const passes =
    deps.registry &&
    new Counter({
      name: 'supplyline_webhook_passes_total',
      help: "Full passes over the webhook queue by this instance (woken by a watched business's commit, a failure, or the idle timer)",
      registers: [deps.registry],
    });
  const outcomes = createOutcomeRecorder({
    writes,
    config,
    log,
    attempts:
      deps.registry &&
      new Counter({
        name: 'supplyline_webhook_attempts_total',
        help: 'Webhook delivery attempts made by this instance, by outcome (succeeded, failed, gone: 410)',
        labelNames: ['outcome'],
        registers: [deps.registry],
      }),
    deliveries:
      deps.registry &&
      new Counter({
        name: 'supplyline_webhook_deliveries_total',
        help: 'Webhook deliveries this instance ended, by outcome (succeeded, failed: no retry left, gone: 410)',
        labelNames: ['outcome'],
        registers: [deps.registry],
      }),
    // A failure has a retry to time, which a full pass does.
    recorded: (failures) => (failures ? kick() : refill()),
  });
  let sending = 0;
  let running = false;
  let again = false;
  let claiming = false;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  // stop() waits for both: they use the database.
  let pumping: Promise<void> = Promise.resolve();
  let claimingNow: Promise<void> = Promise.resolve();
  // A replay can queue many deliveries faster than autovacuum looks: PostgreSQL would then plan for
  // the small table it saw, and read every queued delivery a statement.
  const statistics = createStatisticsRefresh({
    db,
    tables: ['webhook_deliveries'],
    clock,
    after: 1000,
    everyMs: 30_000,
  });
  const flights = new Set<Promise<void>>();
  // Businesses with an enabled endpoint: only their commits wake the worker, so other writes cost
  // no pass. An endpoint made on another instance is found by the next idle pass.
  let watched = new Set<string>();

  /** A full pass: queue from the log and replays, claim, and time the next due delivery. */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    // Not part of the trace of the request whose commit woke it.
    pumping = untraced(pump);
  }

  function wakeAt(ms: number): void {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(kick, Math.max(5, Math.min(IDLE_MS, ms))).unref();
  }

  async function pump(): Promise<void> {
    passes?.inc();
    try {
      for (;;) {
        let held = false;
        do {
          again = false;
          held = (await queueAll()) || held;
          await claimAndSend();
        } while (again && !stopped);
        const due = await nextDue(db);
        // Woken while reading the next due time: look again rather than lose the wake-up.
        if (again && !stopped) continue;
        wakeAt(Math.min(held ? HELD_RETRY_MS : Infinity, due === null ? IDLE_MS : new Date(due).getTime() - clock()));
        return;
      }
    } catch (error) {
      log.warn({ err: error }, 'webhook worker: pass failed; trying again shortly');
      wakeAt(IDLE_MS);
    } finally {
      // In the same step as the last look at `again`: a kick from here on starts a new pass.
      running = false;
    }
  }

  /** True when an endpoint's row was held, so the pass must look again soon. */
  async function queueAll(): Promise<boolean> {
    const work = await queueWork(db);
    watched = work.watched;
    let held = false;
    for (const endpoint of work.endpoints)
      held = (await drain(endpoint.business_id, (ctx) => queueFromLog(ctx, endpoint.id))) || held;
    for (const replay of work.replays)
      held = (await drain(replay.business_id, (ctx) => queueFromReplay(ctx, replay.id))) || held;
    await statistics.refreshIfDue();
    return held;
  }

  /** Runs a queueing step until it has nothing more; true when the endpoint was held. */
  async function drain(businessId: string, step: (ctx: WriteContext) => Promise<number>): Promise<boolean> {
    while (!stopped) {
      const looked = await writes.run({ businessId, actor: SYSTEM }, step);
      if (looked === ENDPOINT_HELD) return true;
      if (looked === 0) return false;
      statistics.grew(looked);
    }
    return false;
  }

  /** stop() waits for the claim under way. */
  function claimAndSend(): Promise<void> {
    const claim = claimAndSendNow();
    claimingNow = claim.catch(() => undefined);
    return claim;
  }

  async function claimAndSendNow(): Promise<void> {
    const free = Math.min(config.concurrency - sending, 4 * config.concurrency - sending - outcomes.unrecorded);
    if (free <= 0 || stopped || claiming) return;
    claiming = true;
    try {
      const now = clock();
      const claims = await claimDeliveries(
        db,
        new Date(now).toISOString(),
        new Date(now + leaseMs).toISOString(),
        free,
      );
      if (claims.length === 0) return;
      let loaded: Awaited<ReturnType<typeof payloads.load>>;
      try {
        loaded = await payloads.load(claims);
      } catch (error) {
        // Nothing was sent: the claims come back when their lease ends.
        log.warn(
          { err: error, deliveries: claims.length },
          "webhook worker: could not load a claim's events or endpoints; its lease will bring it back",
        );
        return;
      }
      const { bodies, endpoints, traceParents } = loaded;
      sending += claims.length;
      for (const claim of claims) {
        const flight = deliver(
          claim,
          bodies.get(claim.id) ?? null,
          endpoints.get(claim.endpoint_id),
          traceParents.get(claim.id) ?? null,
        )
          .catch((error) => {
            log.warn(
              { err: error, deliveryId: claim.id },
              'webhook worker: delivery failed; its lease will bring it back',
            );
          })
          .finally(() => {
            sending--;
            flights.delete(flight);
            refill();
          });
        flights.add(flight);
      }
    } finally {
      claiming = false;
    }
  }

  /** Claims more without a full pass once half the slots are free. */
  function refill(): void {
    if (!stopped && sending <= config.concurrency / 2)
      void claimAndSend().catch((error) => log.warn({ err: error }, 'webhook worker: claim failed'));
  }

  /**
   * Sends one claimed delivery (endpoint deleted meanwhile: its lease lapses) in a span of the
   * appending request's trace, sent on as `traceparent`. The span names the endpoint by id, never
   * by URL, which may hold a token.
   */
  async function deliver(
    claim: Claim,
    body: string | null,
    endpoint: ClaimedEndpoint | undefined,
    traceParent: string | null,
  ): Promise<void> {
    if (!endpoint) return;
    if (body === null) {
      outcomes.add({
        claim,
        result: {
          status: null,
          body: null,
          latencyMs: 0,
          retryAfterSeconds: null,
          error: 'The event is no longer retained',
        },
        final: true,
      });
      return;
    }
    const attributes = {
      'http.request.method': 'POST',
      'supplyline.business_id': claim.business_id,
      'supplyline.webhook.endpoint_id': claim.endpoint_id,
      'supplyline.webhook.delivery_id': claim.id,
      'supplyline.webhook.attempt': claim.attempts + 1,
      'supplyline.event.id': claim.event_id,
    };
    const result = await inAttemptSpan(traceParent, attributes, async (span, sent) => {
      const headers = signedHeaders(endpoint, claim.event_id, body, clock());
      const answer = await sender.send(
        endpoint.row.url,
        sent === null ? headers : { ...headers, traceparent: sent },
        body,
      );
      if (answer.status !== null) span.setAttribute('http.response.status_code', answer.status);
      const outcome = outcomeOf(answer);
      span.setAttribute('supplyline.webhook.outcome', outcome);
      if (outcome !== 'succeeded') span.setStatus({ code: SpanStatusCode.ERROR });
      return answer;
    });
    outcomes.add({ claim, result, final: false });
  }

  const unlisten = { off: () => {} };

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      unlisten.off = deps.events.onNotify((businessId) => {
        // While a pass runs, `watched` may be about to gain this business.
        if (businessId === null || running || watched.has(businessId)) kick();
      });
      kick();
    },
    /**
     * Waits for the pass and claim under way, then up to `waitMs` for in-flight outcomes; later
     * ones are not recorded, and their leases bring the deliveries back.
     */
    async stop(waitMs = 3000): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      unlisten.off();
      await Promise.allSettled([pumping, claimingNow]);
      await Promise.race([
        Promise.allSettled([...flights]).then(() => outcomes.drain()),
        new Promise((resolve) => setTimeout(resolve, waitMs).unref()),
      ]);
      await outcomes.close();
      sender.close();
    },
    kick,
  };
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
