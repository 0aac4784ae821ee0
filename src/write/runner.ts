import type { Kysely, Transaction } from 'kysely';
import { AsyncResource } from 'node:async_hooks';
import { isUniqueViolation, statementsAreRoundTrips } from '../db/dialect.ts';
import type { Database } from '../db/types.ts';
import { ApiError, errorBody } from '../lib/errors.ts';
import { readJson } from '../lib/json.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { appendEvents } from '../log/append.ts';
import type { NewEvent } from '../log/events.ts';
import { activeTraceParent, inChildSpan } from '../telemetry/spans.ts';
import { recordChanges } from '../log/audit.ts';
import { keepWriteTime, laterThan, takeWriteTime } from './clock.ts';
import { WriteGroups } from './groups.ts';
import {
  completeRecord,
  deleteExpiredRecord,
  findRecord,
  insertRecord,
  type IdempotencyRecord,
  type StoredResponse,
} from './idempotency-records.ts';

/** Who makes a write: an API key today; a console user or the service itself (jobs, CLI) too. */
export interface Actor {
  type: 'api_key' | 'user' | 'system';
  id: string;
  /** A name a person recognises, where there is one (API keys get names with the console). */
  name: string | null;
}

/** A write on its way through the runner. */
interface Member<T> {
  scope: WriteScope;
  key: string | null;
  work: (ctx: WriteContext) => Promise<T>;
  events: NewEvent[];
  /** When it asked for its business's write lock (performance.now()). */
  asked: number;
  /** Its request's async context, in which it runs when another write's group runs it. */
  context: AsyncResource;
  started?: boolean;
}

/** The service itself: the first start's business, the demo generator, jobs. */
export const SYSTEM: Actor = { type: 'system', id: 'supplyline', name: 'Supplyline' };
/** An operator at the command line. */
export const CLI: Actor = { type: 'system', id: 'cli', name: 'Command line' };

/** What every service receives for a write: the transaction, whose write it is, and when. */
export interface WriteContext {
  trx: Transaction<Database>;
  businessId: string;
  actor: Actor;
  /** The request that asked for it (X-Request-Id), null for the CLI and jobs. */
  requestId: string | null;
  /** The Idempotency-Key the write runs under, if any. */
  idempotencyKey: string | null;
  /**
   * The write's time: every timestamp the write stores. Taken with the business's write lock
   * (src/write/clock.ts), so it is later than every write of the business that committed before.
   */
  now: string;
  /** Records an event of this write; the runner appends them last, in the write's transaction. */
  emit(event: NewEvent): void;
}

export interface WriteScope {
  businessId: string;
  actor: Actor;
  requestId?: string;
  /**
   * The request's `traceparent`, sampled or not, kept with the events when no recorded span is
   * active (an unsampled request runs outside its trace), so that their deliveries follow the
   * request's trace and its sampling decision (src/telemetry/spans.ts).
   */
  traceParent?: string | null;
}

/** A response a write answers with, as it is stored for replay under an Idempotency-Key. */
export interface WriteResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body shows a secret: stored for replay encrypted with the runner's SecretBox, never as it is. */
  sealed?: boolean;
}

export interface Idempotency {
  key: string;
  /** The hash of the request (method, path, body): the same key with another request is refused. */
  fingerprint: string;
}

export type Replayable = { response: WriteResponse; replayed: boolean };

export interface WriteRunner {
  /** Runs `work` in one transaction with its context; the result is what `work` returns. */
  run<T>(scope: WriteScope, work: (ctx: WriteContext) => Promise<T>): Promise<T>;
  /**
   * As `run`, under an Idempotency-Key: the first request's response is stored in the write's own
   * transaction and answered again to every repeat within the TTL (`replayed: true`).
   */
  runIdempotent(
    scope: WriteScope,
    idempotency: Idempotency,
    work: (ctx: WriteContext) => Promise<WriteResponse>,
  ): Promise<Replayable>;
}

/** 4xx answers other than validation are part of the outcome and are replayed; 400 and 5xx are not. */
function isStorable(error: unknown): error is ApiError {
  return (
    error instanceof ApiError &&
    error.status > 400 &&
    error.status < 500 &&
    error.code !== 'IDEMPOTENCY_KEY_IN_USE' &&
    error.code !== 'IDEMPOTENCY_KEY_REUSED' &&
    error.code !== 'UNAUTHORIZED' &&
    error.code !== 'RATE_LIMITED'
  );
}

const SEALED = 'sealed:';

function stored(response: WriteResponse, box?: SecretBox): StoredResponse {
  const body = response.body === undefined ? '' : JSON.stringify(response.body);
  if (response.sealed && !box)
    throw new Error('A response that shows a secret needs the write runner to have a SecretBox');
  return {
    response_status: response.status,
    response_headers: response.headers ? JSON.stringify(response.headers) : null,
    response_body: response.sealed ? SEALED + box!.seal(body) : body,
  };
}

function replay(record: IdempotencyRecord, fingerprint: string, box?: SecretBox): Replayable {
  if (record.fingerprint !== fingerprint) {
    throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
  }
  const text =
    record.response_body.startsWith(SEALED) && box
      ? box.open(record.response_body.slice(SEALED.length))
      : record.response_body;
  return {
    response: {
      status: record.response_status,
      body: text === '' ? undefined : JSON.parse(text),
      headers: readJson<Record<string, string>>(record.response_headers) ?? undefined,
    },
    replayed: true,
  };
}

/**
 * The one write path: every write of the service (API, CLI, background jobs) runs through here,
 * and this is the one place that opens a write transaction. Services get a WriteContext and
 * never open one themselves; what has to happen in every write transaction happens here.
 */
export interface WriteRunnerOptions {
  idempotencyTtlHours?: number;
  clock?: () => number;
  /** Called after a write with events has committed: wakes this instance's long polls. */
  onEvents?: (businessId: string, events: NewEvent[]) => void;
  /** Encrypts stored answers that show a secret (`WriteResponse.sealed`). */
  box?: SecretBox;
  /** Writes of this instance now waiting for their business's write lock (/metrics). */
  lockWaiting?: { inc(): void; dec(): void };
  /** How long each write waited for the lock, in seconds (/metrics). */
  lockWait?: { observe(seconds: number): void };
}

/** The channel on which PostgreSQL tells every instance that a business has new events. */
export const EVENTS_CHANNEL = 'supplyline_events';

export function createWriteRunner(db: Kysely<Database>, options: WriteRunnerOptions = {}): WriteRunner {
  const clock = options.clock ?? Date.now;
  const ttlMs = (options.idempotencyTtlHours ?? 24) * 3_600_000;
  const inFlight = new Set<string>();

  /** A write, in a span of its own when it is part of a traced request (src/telemetry/spans.ts). */
  async function inTransaction<T>(
    scope: WriteScope,
    key: string | null,
    work: (ctx: WriteContext) => Promise<T>,
  ): Promise<T> {
    return inChildSpan(
      'write',
      { 'supplyline.business_id': scope.businessId, 'supplyline.actor_type': scope.actor.type },
      () => transact(scope, key, work),
    );
  }

  /*
   * One write, in a transaction given to it: take the business's write lock and the write's time
   * (src/write/clock.ts), do the work, append the events it asked for. No write without its events,
   * no event without its write.
   */
  async function write<T>(trx: Transaction<Database>, member: Member<T>, joined = false): Promise<T> {
    const { scope } = member;
    member.started = true;
    let now: string;
    try {
      // A write that joined a group's transaction holds the lock already, and follows the group's last time.
      now = joined ? laterThan(lastTimes.get(trx)!, clock()) : await takeWriteTime(trx, scope.businessId, clock());
    } finally {
      options.lockWaiting?.dec();
    }
    lastTimes.set(trx, now);
    options.lockWait?.observe((performance.now() - member.asked) / 1000);
    const ctx: WriteContext = {
      trx,
      businessId: scope.businessId,
      actor: scope.actor,
      requestId: scope.requestId ?? null,
      idempotencyKey: member.key,
      now,
      emit: (event) => {
        member.events.push(event);
      },
    };
    const outcome = await member.work(ctx);
    if (member.events.length > 0) {
      await inChildSpan('append events', { 'supplyline.events': member.events.length }, () =>
        appendEvents(trx, ctx, member.events, EVENTS_CHANNEL, activeTraceParent() ?? scope.traceParent ?? null),
      );
    }
    await recordChanges(trx, ctx, member.events);
    return outcome;
  }

  /** The one place a write transaction opens: a write alone, or (PostgreSQL) the next writes of its business together. */
  function transact<T>(scope: WriteScope, key: string | null, work: (ctx: WriteContext) => Promise<T>): Promise<T> {
    options.lockWaiting?.inc();
    const member: Member<T> = {
      scope,
      key,
      work,
      events: [],
      asked: performance.now(),
      context: new AsyncResource('write'),
    };
    const written = grouped
      ? groups.join(scope.businessId, (trx, joined) => member.context.runInAsyncScope(() => write(trx, member, joined)))
      : db.transaction().execute((trx) => write(trx, member));
    return written.then(
      (result) => {
        if (member.events.length > 0) options.onEvents?.(scope.businessId, member.events);
        return result;
      },
      (error) => {
        if (!member.started) options.lockWaiting?.dec();
        throw error;
      },
    );
  }

  // Where each statement is a round trip, a business's waiting writes share a transaction (src/write/groups.ts).
  const grouped = statementsAreRoundTrips(db);
  /** The time of the last write each open transaction ran (a group's writes follow it). */
  const lastTimes = new WeakMap<Transaction<Database>, string>();
  // A group's writes after the first took their times without the clock: it is stored once, before COMMIT.
  const groups = new WriteGroups(db, (trx, businessId) => keepWriteTime(trx, businessId, lastTimes.get(trx)!));

  return {
    run: (scope, work) => inTransaction(scope, null, work),

    /*
     * The record is inserted first inside the write's own transaction and completed before commit,
     * so a write never exists without its record, nor a record without its write. A concurrent twin
     * on another instance blocks on the record's primary key, then finds it and replays.
     */
    async runIdempotent(scope, { key, fingerprint }, work) {
      const { businessId } = scope;
      const now = new Date(clock());
      const existing = await findRecord(db, businessId, key);
      if (existing && new Date(existing.expires_at).getTime() > now.getTime())
        return replay(existing, fingerprint, options.box);
      if (existing) await deleteExpiredRecord(db, businessId, key, now.toISOString());

      const slot = `${businessId}\u0000${key}`;
      if (inFlight.has(slot)) {
        throw new ApiError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed');
      }
      inFlight.add(slot);
      const record = {
        business_id: businessId,
        key,
        fingerprint,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + ttlMs).toISOString(),
      };
      try {
        const response = await inTransaction(scope, key, async (ctx) => {
          await insertRecord(ctx.trx, { ...record, response_status: 0, response_body: '', response_headers: null });
          const outcome = await work(ctx);
          await completeRecord(ctx.trx, businessId, key, stored(outcome, options.box));
          return outcome;
        });
        return { response, replayed: false };
      } catch (error) {
        if (isUniqueViolation(error)) {
          const winner = await findRecord(db, businessId, key);
          if (winner) return replay(winner, fingerprint, options.box);
        }
        if (isStorable(error)) {
          // Outside the failed transaction: one statement, nothing else to keep consistent with.
          await insertRecord(
            db,
            { ...record, ...stored({ status: error.status, body: errorBody(error, scope.requestId ?? '') }) },
            true,
          );
        }
        throw error;
      } finally {
        inFlight.delete(slot);
      }
    },
  };
}

/** What a service's write returns: the resource as the API shows it now, and as it was before, where it existed. */
export interface Written<T> {
  resource: T;
  before: T | null;
  /** An update that would have changed nothing a GET shows, and so wrote nothing (src/write/update.ts). */
  unchanged?: true;
}
