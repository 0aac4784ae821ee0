import type { FastifyBaseLogger } from 'fastify';
import { sql, type Kysely } from 'kysely';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { WebhookConfig } from '../config.ts';
import type { Database } from '../db/types.ts';
import type { EventBus } from '../events/bus.ts';
import { eventJson } from '../events/mapper.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { SYSTEM, type WriteContext, type WriteRunner } from '../write/runner.ts';
import { claimDeliveries, ENDPOINT_HELD, lockEndpoints, nextDue, queueFromLog, queueFromReplay, queueWork, releaseNext, type Claim } from './queue.ts';
import type { EndpointRow } from './repository.ts';
import { insertRows } from '../db/bulk.ts';
import { anyOf, anyOfNumbers } from '../db/dialect.ts';
import { groupBy } from '../lib/group.ts';
import { createSender, type SendResult } from './sender.ts';
import { changeStatusBySystem } from './service.ts';
import { signatureHeader } from './signature.ts';

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

/** Longest wait between two looks at the queue: retries and other instances' leases are found so. */
const IDLE_MS = 1000;
/** When an endpoint's row was held by another transaction: how soon to look again. */
const HELD_RETRY_MS = 20;


type Outcome = 'succeeded' | 'failed' | 'gone';


/**
 * Webhook delivery, inside every server instance. One loop queues deliveries from the event log
 * (woken by commits on any instance, through the EventBus), claims due deliveries with a lease,
 * and sends up to `concurrency` at a time; each attempt's outcome is written through the write
 * runner. Several instances share the queue: claims skip each other's rows, and a dead instance's
 * claims fall due again when their lease ends (so delivery is at least once).
 */
export function createWebhookWorker(deps: WorkerDeps) {
  const { db, writes, config, box, clock, log } = deps;
  const sender = createSender({ timeoutMs: config.timeoutMs, allowPrivateNetworks: config.allowPrivateNetworks });
  // Longer than an attempt can take, with room for recording it; then a dead instance's claim falls due again.
  const leaseMs = 2 * config.timeoutMs + 5_000;
  const attempts = deps.registry && new Counter({
    name: 'supplyline_webhook_attempts_total', help: 'Webhook delivery attempts made by this instance, by outcome (succeeded, failed, gone: 410)',
    labelNames: ['outcome'], registers: [deps.registry],
  });
  const passes = deps.registry && new Counter({
    name: 'supplyline_webhook_passes_total', help: 'Full passes over the webhook queue by this instance (woken by a watched business\'s commit, a failure, or the idle timer)',
    registers: [deps.registry],
  });
  // Attempts being sent (at most `concurrency`), and sent but not yet recorded (bounded too, so a slow database slows claiming).
  let sending = 0;
  let unrecorded = 0;
  let running = false;
  let again = false;
  let claiming = false;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const outcomes: Array<{ claim: Claim; result: SendResult; final: boolean }> = [];
  const flights = new Set<Promise<void>>();
  const opened = new Map<string, string>();
  // Businesses with an enabled endpoint, as of the last pass: only their commits wake the worker.
  // Without this every write of every business cost a pass (four statements), which under load
  // on SQLite's one connection delayed API requests. An endpoint made through another instance is
  // found by the next idle pass (at most IDLE_MS); one made here kicks the worker itself.
  let watched = new Set<string>();

  /** A full pass: queue from the log and replays, claim, and set the timer for the next due delivery. */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    void pump();
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
          held = await queueAll() || held;
          await claimAndSend();
        } while (again && !stopped);
        const due = await nextDue(db);
        // Woken while the next due time was read: look again, rather than sleep through a commit
        // until the idle pass (a lost wake-up, up to IDLE_MS late).
        if (again && !stopped) continue;
        // An endpoint held by another transaction (held only for a moment) is looked at again soon.
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

  /** Queues what the log and replays hold; true when an endpoint's row was held, so the pass must look again soon. */
  async function queueAll(): Promise<boolean> {
    const work = await queueWork(db);
    watched = work.watched;
    let held = false;
    for (const endpoint of work.endpoints) held = await drain(endpoint.business_id, (ctx) => queueFromLog(ctx, endpoint.id)) || held;
    for (const replay of work.replays) held = await drain(replay.business_id, (ctx) => queueFromReplay(ctx, replay.id)) || held;
    return held;
  }

  /** Runs a queueing step, 500 events at a time, until it has nothing more; true when the endpoint was held. */
  async function drain(businessId: string, step: (ctx: WriteContext) => Promise<number>): Promise<boolean> {
    while (!stopped) {
      const looked = await writes.run({ businessId, actor: SYSTEM }, step);
      if (looked === ENDPOINT_HELD) return true;
      if (looked === 0) return false;
    }
    return false;
  }

  /** Claims what fits in the free slots, in one statement, and sends it; loads the batch's events in one read per business. */
  async function claimAndSend(): Promise<void> {
    const free = Math.min(config.concurrency - sending, 4 * config.concurrency - sending - unrecorded);
    if (free <= 0 || stopped || claiming) return;
    claiming = true;
    try {
      const now = clock();
      const claims = await claimDeliveries(db, new Date(now).toISOString(), new Date(now + leaseMs).toISOString(), free);
      if (claims.length === 0) return;
      sending += claims.length;
      const [bodies, endpoints] = await Promise.all([eventBodies(claims), endpointsOf(claims)]);
      for (const claim of claims) {
        const flight = deliver(claim, bodies.get(claim.id) ?? null, endpoints.get(claim.endpoint_id))
          .catch((error) => {
            log.warn({ err: error, deliveryId: claim.id }, 'webhook worker: delivery failed; its lease will bring it back');
            sending--;
          })
          .finally(() => flights.delete(flight));
        flights.add(flight);
      }
    } finally {
      claiming = false;
    }
  }

  /** More work when half the slots are free, without a full pass (deliveries finishing call this). */
  function refill(): void {
    if (!stopped && sending <= config.concurrency / 2) void claimAndSend().catch((error) => log.warn({ err: error }, 'webhook worker: claim failed'));
  }

  async function eventBodies(claims: Claim[]): Promise<Map<string, string>> {
    const bodies = new Map<string, string>();
    const byBusiness = groupBy(claims.filter((c) => c.payload === null), (c) => c.business_id);
    for (const [businessId, group] of byBusiness) {
      const rows = await db.selectFrom('events').selectAll().where('business_id', '=', businessId)
        .where(anyOfNumbers(db, 'sequence', group.map((c) => Number(c.sequence)))).execute();
      const bySequence = new Map(rows.map((r) => [Number(r.sequence), r]));
      for (const claim of group) {
        const row = bySequence.get(Number(claim.sequence));
        if (row) bodies.set(claim.id, eventJson(row));
      }
    }
    for (const claim of claims) if (claim.payload !== null) bodies.set(claim.id, claim.payload);
    return bodies;
  }

  /** The batch's endpoints, read in one statement (so a rotation or a new URL applies to the next claim); secrets decrypted once. */
  async function endpointsOf(claims: Claim[]): Promise<Map<string, { row: EndpointRow; secrets: string[] }>> {
    const ids = [...new Set(claims.map((c) => c.endpoint_id))];
    const rows = await db.selectFrom('webhook_endpoints').selectAll().where(anyOf(db, 'id', ids)).execute();
    return new Map(rows.map((row) => [row.id, { row, secrets: [openSecret(row.secret), ...(row.previous_secret ? [openSecret(row.previous_secret)] : [])] }]));
  }

  function openSecret(sealed: string): string {
    let plain = opened.get(sealed);
    if (plain === undefined) {
      plain = box.open(sealed);
      if (opened.size > 10_000) opened.clear();
      opened.set(sealed, plain);
    }
    return plain;
  }

  async function deliver(claim: Claim, body: string | null, endpoint: { row: EndpointRow; secrets: string[] } | undefined): Promise<void> {
    const now = clock();
    if (!endpoint) {
      sending--;
      return;
    }
    if (body === null) {
      finish(claim, { status: null, body: null, latencyMs: 0, retryAfterSeconds: null, error: 'The event is no longer retained' }, true);
      return;
    }
    const graceEnds = endpoint.row.previous_secret_expires_at === null ? 0 : new Date(endpoint.row.previous_secret_expires_at).getTime();
    const secrets = endpoint.secrets.length > 1 && graceEnds <= now ? endpoint.secrets.slice(0, 1) : endpoint.secrets;
    const timestamp = Math.floor(now / 1000);
    const result = await sender.send(endpoint.row.url, {
      'webhook-id': claim.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, claim.event_id, timestamp, body),
    }, body);
    finish(claim, result, false);
  }

  /** Outcomes are written in batches: up to 64 at once, or 5 ms after the first, one transaction per business. */
  function finish(claim: Claim, result: SendResult, final: boolean): void {
    sending--;
    unrecorded++;
    outcomes.push({ claim, result, final });
    refill();
    if (outcomes.length >= 64) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
      flush();
    } else {
      flushTimer ??= setTimeout(() => { flushTimer = undefined; flush(); }, 5);
    }
  }

  function flush(): void {
    const batch = outcomes.splice(0);
    if (batch.length === 0) return;
    flushing = flushing.then(async () => {
      for (const [businessId, group] of groupBy(batch, (o) => o.claim.business_id)) {
        try {
          await writes.run({ businessId, actor: SYSTEM }, (ctx) => writeAttempts(ctx, group));
        } catch (error) {
          log.warn({ err: error, deliveries: group.length }, 'webhook worker: outcomes failed to record; their lease will bring them back');
        }
        unrecorded -= group.length;
      }
      // A failure has a retry to time: a full pass sets the timer; otherwise just fill the free slots.
      if (batch.some((o) => outcomeOf(o.result) !== 'succeeded')) kick();
      else refill();
    });
  }

  function outcomeOf(result: SendResult): Outcome {
    if (result.status !== null && result.status >= 200 && result.status < 300) return 'succeeded';
    return result.status === 410 ? 'gone' : 'failed';
  }

  /**
   * Writes outcomes: each attempt, its delivery's next state, the next delivery of its resource, and
   * the endpoints' health. Successes (most outcomes) are one statement per claim batch, releases one
   * per endpoint, so a batch of 64 costs a handful of round trips rather than two per delivery.
   */
  async function writeAttempts(ctx: WriteContext, batch: Array<{ claim: Claim; result: SendResult; final: boolean }>): Promise<void> {
    const { trx, now } = ctx;
    const schedule = config.retrySchedule;
    const attemptRows: unknown[][] = [];
    await lockEndpoints(trx, [...new Set(batch.map((o) => o.claim.endpoint_id))]);
    const decided = batch.map((o) => ({ ...o, outcome: outcomeOf(o.result) }));
    // Only while the lease token still matches: a delivery another instance took over (this one
    // outlived its lease) keeps that instance's outcome.
    const succeeded = new Set<string>();
    for (const [token, group] of groupBy(decided.filter((o) => o.outcome === 'succeeded'), (o) => o.claim.lease_token)) {
      const rows = await trx.updateTable('webhook_deliveries')
        .set({ status: 'succeeded', attempts: sql<number>`attempts + 1`, due_at: now, finished_at: now, lease_token: null })
        .where(anyOf(trx, 'id', group.map((o) => o.claim.id))).where('lease_token', '=', token)
        .returning('id').execute();
      for (const row of rows) succeeded.add(row.id);
    }
    const healthy = new Set<string>();
    const failing = new Set<string>();
    const gone = new Set<string>();
    const finishedResources = new Map<string, string[]>();
    for (const { claim, result, final, outcome } of decided) {
      attempts?.inc({ outcome });
      const attempt = claim.attempts + 1;
      let retryAt: string | null = null;
      if (outcome === 'succeeded') {
        if (!succeeded.has(claim.id)) continue;
      } else {
        if (outcome === 'failed' && !final && attempt < schedule.length) {
          const delay = Math.max(schedule[attempt], Math.min(result.retryAfterSeconds ?? 0, 86_400));
          retryAt = new Date(new Date(now).getTime() + delay * 1000).toISOString();
        }
        const updated = await trx.updateTable('webhook_deliveries')
          .set({ status: retryAt !== null ? 'pending' : 'failed', attempts: attempt, due_at: retryAt ?? now, finished_at: retryAt === null ? now : null, lease_token: null })
          .where('id', '=', claim.id).where('lease_token', '=', claim.lease_token).executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) continue;
      }
      attemptRows.push([
        claim.id, attempt, now, result.status, result.latencyMs, result.body,
        result.error ?? (outcome === 'failed' && result.status !== null ? `Answered ${result.status}` : null), retryAt,
      ]);
      if (retryAt === null) finishedResources.set(claim.endpoint_id, [...(finishedResources.get(claim.endpoint_id) ?? []), claim.resource_key]);
      (outcome === 'succeeded' ? healthy : outcome === 'gone' ? gone : failing).add(claim.endpoint_id);
    }
    for (const [endpointId, resourceKeys] of finishedResources) await releaseNext(trx, endpointId, resourceKeys, now);
    await insertRows(trx, 'webhook_attempts', ['delivery_id', 'attempt', 'attempted_at', 'response_status', 'latency_ms', 'response_body', 'error', 'next_attempt_at'], attemptRows);
    for (const id of healthy) {
      await trx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', id).where('failing_since', 'is not', null).execute();
    }
    for (const id of gone) await changeStatusBySystem(ctx, id, 'disabled');
    for (const id of failing) {
      if (healthy.has(id) || gone.has(id)) continue;
      await trx.updateTable('webhook_endpoints').set({ failing_since: now }).where('id', '=', id).where('failing_since', 'is', null).execute();
      const endpoint = await trx.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', id).executeTakeFirst();
      const since = endpoint?.failing_since ? new Date(endpoint.failing_since).getTime() : Infinity;
      if (new Date(now).getTime() - since >= config.pauseAfterSeconds * 1000) await changeStatusBySystem(ctx, id, 'paused');
    }
  }

  const unlisten = { off: () => {} };

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      unlisten.off = deps.events.onNotify((businessId) => {
        // While a pass runs, `watched` may be about to gain this business: look again after it.
        if (businessId === null || running || watched.has(businessId)) kick();
      });
      kick();
    },
    /** Stops taking work, and waits (up to `waitMs`) for deliveries in flight to be recorded. */
    async stop(waitMs = 3000): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      unlisten.off();
      await Promise.race([
        Promise.allSettled([...flights]).then(() => { clearTimeout(flushTimer); flush(); return flushing; }),
        new Promise((resolve) => setTimeout(resolve, waitMs).unref()),
      ]);
      sender.close();
    },
    /** Looks at the queue now (tests, and after a write that queued something). */
    kick,
  };
}

/** Queue depth and the oldest due delivery's age, read when /metrics is scraped. */
export function registerWebhookGauges(registry: Registry, db: Kysely<Database>, clock: () => number): void {
  new Gauge({
    name: 'supplyline_webhook_queue_depth', help: 'Webhook deliveries not finished, by state (queued behind their resource, pending, delivering)',
    labelNames: ['status'], registers: [registry],
    async collect() {
      const rows = await db.selectFrom('webhook_deliveries').select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
        .where('status', 'in', ['queued', 'pending', 'delivering']).groupBy('status').execute();
      for (const status of ['queued', 'pending', 'delivering']) this.set({ status }, Number(rows.find((r) => r.status === status)?.n ?? 0));
    },
  });
  new Gauge({
    name: 'supplyline_webhook_oldest_pending_seconds', help: 'How long the longest-waiting due delivery has been due (0 when none is)',
    registers: [registry],
    async collect() {
      const now = new Date(clock()).toISOString();
      const row = await db.selectFrom('webhook_deliveries').select((eb) => eb.fn.min('due_at').as('due'))
        .where('status', '=', 'pending').where('due_at', '<=', now).executeTakeFirst();
      const due = row?.due as Date | string | null | undefined;
      this.set(due == null ? 0 : Math.max(0, (clock() - new Date(due).getTime()) / 1000));
    },
  });
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>;
