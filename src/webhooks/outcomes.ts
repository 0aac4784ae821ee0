import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Counter } from 'prom-client';
import type { WebhookConfig } from '../config.ts';
import { insertRows } from '../db/bulk.ts';
import { anyOf } from '../db/dialect.ts';
import { groupBy } from '../lib/group.ts';
import { SYSTEM, type WriteContext, type WriteRunner } from '../write/runner.ts';
import { lockEndpoints, releaseNext, type Claim } from './queue.ts';
import type { SendResult } from './sender.ts';
import { changeStatusBySystem } from './service.ts';

export type Outcome = 'succeeded' | 'failed' | 'gone';

export interface Attempted {
  claim: Claim;
  result: SendResult;
  /** No attempt is left whatever the answer. */
  final: boolean;
}

export function outcomeOf(result: SendResult): Outcome {
  if (result.status !== null && result.status >= 200 && result.status < 300) return 'succeeded';
  return result.status === 410 ? 'gone' : 'failed';
}

export interface OutcomeRecorderDeps {
  writes: WriteRunner;
  config: WebhookConfig;
  log: FastifyBaseLogger;
  attempts?: Counter<'outcome'>;
  /** Deliveries that ended, by outcome. */
  deliveries?: Counter<'outcome'>;
  /** After a batch is recorded; `failures` when one of them has a retry to time. */
  recorded(failures: boolean): void;
}

/**
 * Records attempts' outcomes in batches, one transaction per business, one batch at a time:
 * successes take one statement per batch and releases one per endpoint, not two per delivery.
 */
export function createOutcomeRecorder(deps: OutcomeRecorderDeps) {
  const { writes, config, log } = deps;
  const waiting: Attempted[] = [];
  let unrecorded = 0;
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  // Closed when the worker stops, as the database may close next; later outcomes are left to the leases.
  let closed = false;

  function add(attempted: Attempted): void {
    if (closed) return;
    unrecorded++;
    waiting.push(attempted);
    if (waiting.length >= 64) {
      clearTimeout(timer);
      timer = undefined;
      flush();
    } else {
      timer ??= setTimeout(() => {
        timer = undefined;
        flush();
      }, 5);
    }
  }

  function flush(): void {
    const batch = waiting.splice(0);
    if (batch.length === 0) return;
    flushing = flushing.then(async () => {
      for (const [businessId, group] of groupBy(batch, (o) => o.claim.business_id)) {
        try {
          const ended = await writes.run({ businessId, actor: SYSTEM }, (ctx) => record(ctx, group));
          for (const outcome of ended) deps.deliveries?.inc({ outcome });
        } catch (error) {
          log.warn(
            { err: error, deliveries: group.length },
            'webhook worker: outcomes failed to record; their lease will bring them back',
          );
        }
        unrecorded -= group.length;
      }
      deps.recorded(batch.some((o) => outcomeOf(o.result) !== 'succeeded'));
    });
  }

  /** Writes each attempt, its delivery's next state, its resource's next delivery and endpoint health. */
  async function record(ctx: WriteContext, batch: Attempted[]): Promise<Outcome[]> {
    const ended: Outcome[] = [];
    const { trx, now } = ctx;
    const schedule = config.retrySchedule;
    const attemptRows: unknown[][] = [];
    await lockEndpoints(trx, [...new Set(batch.map((o) => o.claim.endpoint_id))]);
    const decided = batch.map((o) => ({ ...o, outcome: outcomeOf(o.result) }));
    // Only while the lease token matches: a delivery another instance took over keeps its outcome.
    const succeeded = new Set<string>();
    for (const [token, group] of groupBy(
      decided.filter((o) => o.outcome === 'succeeded'),
      (o) => o.claim.lease_token,
    )) {
      const rows = await trx
        .updateTable('webhook_deliveries')
        .set({
          status: 'succeeded',
          attempts: sql<number>`attempts + 1`,
          due_at: now,
          finished_at: now,
          lease_token: null,
        })
        .where(
          anyOf(
            trx,
            'id',
            group.map((o) => o.claim.id),
          ),
        )
        .where('lease_token', '=', token)
        .returning('id')
        .execute();
      for (const row of rows) succeeded.add(row.id);
    }
    const healthy = new Set<string>();
    const failing = new Set<string>();
    const gone = new Set<string>();
    const finishedResources = new Map<string, string[]>();
    for (const { claim, result, final, outcome } of decided) {
      deps.attempts?.inc({ outcome });
      const attempt = claim.attempts + 1;
      let retryAt: string | null = null;
      if (outcome === 'succeeded') {
        if (!succeeded.has(claim.id)) continue;
      } else {
        if (outcome === 'failed' && !final && attempt < schedule.length) {
          const delay = Math.max(schedule[attempt], Math.min(result.retryAfterSeconds ?? 0, 86_400));
          retryAt = new Date(new Date(now).getTime() + delay * 1000).toISOString();
        }
        const updated = await trx
          .updateTable('webhook_deliveries')
          .set({
            status: retryAt !== null ? 'pending' : 'failed',
            attempts: attempt,
            due_at: retryAt ?? now,
            finished_at: retryAt === null ? now : null,
            lease_token: null,
          })
          .where('id', '=', claim.id)
          .where('lease_token', '=', claim.lease_token)
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) continue;
      }
      attemptRows.push([
        claim.id,
        attempt,
        now,
        result.status,
        result.latencyMs,
        result.body,
        result.error ?? (outcome === 'failed' && result.status !== null ? `Answered ${result.status}` : null),
        retryAt,
      ]);
      if (retryAt === null) {
        finishedResources.set(claim.endpoint_id, [
          ...(finishedResources.get(claim.endpoint_id) ?? []),
          claim.resource_key,
        ]);
        ended.push(outcome);
      }
      (outcome === 'succeeded' ? healthy : outcome === 'gone' ? gone : failing).add(claim.endpoint_id);
    }
    for (const [endpointId, resourceKeys] of finishedResources) await releaseNext(trx, endpointId, resourceKeys, now);
    await insertRows(
      trx,
      'webhook_attempts',
      [
        'delivery_id',
        'attempt',
        'attempted_at',
        'response_status',
        'latency_ms',
        'response_body',
        'error',
        'next_attempt_at',
      ],
      attemptRows,
    );
    for (const id of healthy) {
      await trx
        .updateTable('webhook_endpoints')
        .set({ failing_since: null })
        .where('id', '=', id)
        .where('failing_since', 'is not', null)
        .execute();
    }
    for (const id of gone) await changeStatusBySystem(ctx, id, 'disabled');
    for (const id of failing) {
      if (healthy.has(id) || gone.has(id)) continue;
      await trx
        .updateTable('webhook_endpoints')
        .set({ failing_since: now })
        .where('id', '=', id)
        .where('failing_since', 'is', null)
        .execute();
      const endpoint = await trx
        .selectFrom('webhook_endpoints')
        .select('failing_since')
        .where('id', '=', id)
        .executeTakeFirst();
      const since = endpoint?.failing_since ? new Date(endpoint.failing_since).getTime() : Infinity;
      if (new Date(now).getTime() - since >= config.pauseAfterSeconds * 1000)
        await changeStatusBySystem(ctx, id, 'paused');
    }
    return ended;
  }

  return {
    add,
    /** Sent but not yet recorded; the worker bounds them, so a slow database slows claiming. */
    get unrecorded(): number {
      return unrecorded;
    },
    /** Resolves when every batch so far is recorded. */
    drain(): Promise<void> {
      clearTimeout(timer);
      timer = undefined;
      flush();
      return flushing;
    },
    /** Records nothing more; resolves when what was under way is recorded. */
    close(): Promise<void> {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      waiting.length = 0;
      return flushing;
    },
  };
}
