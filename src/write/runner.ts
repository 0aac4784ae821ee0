import type { Kysely, Transaction } from 'kysely';
import { AsyncResource } from 'node:async_hooks';
import { statementsAreRoundTrips } from '../db/dialect.ts';
import type { Database } from '../db/types.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import { appendEvents, type WriteEvents } from '../log/append.ts';
import { atCommit, type Collected, collectFor, type Flush, flushCollected } from './at-commit.ts';
import type { NewEvent } from '../log/events.ts';
import { activeTraceParent, inChildSpan } from '../telemetry/spans.ts';
import { recordChanges } from '../log/audit.ts';
import { keepWriteTime, laterThan, takeWriteTime } from './clock.ts';
import { WriteGroups } from './groups.ts';
import { type Idempotency, type Replayable, runIdempotent, type WriteResponse } from './idempotency.ts';
import { conflict } from '../lib/errors.ts';

export type { Idempotency, Replayable, WriteResponse } from './idempotency.ts';

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
  /** What it asked a group to write once before its COMMIT: its events, the read model's counts (src/write/at-commit.ts). */
  atCommit: Collected[];
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
  /** A long write (an import's batch): on PostgreSQL it begins a group of writes, and joins none (src/write/groups.ts). */
  long?: boolean;
  /** A write of the business's own reset or deletion: it goes on while the business is closed to writes (`closeWrites`). */
  whileClosed?: boolean;
}

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

/** One flush for every write's events: a group's go in one statement (decision 0070). */
const appendWrites: Flush<WriteEvents> = (trx, _businessId, writes) => appendEvents(trx, writes, EVENTS_CHANNEL);

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
   * (src/write/clock.ts), do the work, append the events it asked for (in a group, the group appends
   * every member's events at once, before its COMMIT). No write without its events, no event
   * without its write.
   */
  async function write<T>(trx: Transaction<Database>, member: Member<T>, joined = false): Promise<T> {
    const { scope } = member;
    // A group may run a member again, when the write before it failed after it had begun (src/write/groups.ts).
    const again = member.started === true;
    member.started = true;
    member.events = [];
    member.atCommit = [];
    if (grouped) collectFor(trx, member.atCommit);
    let now: string;
    let closed: string | null;
    try {
      // A write that joined a group's transaction holds the lock already, and follows the group's last time.
      if (joined) {
        now = laterThan(lastTimes.get(trx)!, clock());
        closed = closedIn.get(trx) ?? null;
      } else {
        ({ time: now, closed } = await takeWriteTime(trx, scope.businessId, clock()));
        closedIn.set(trx, closed);
      }
    } finally {
      if (!again) options.lockWaiting?.dec();
    }
    if (closed !== null && !scope.whileClosed) throw conflict(closed);
    lastTimes.set(trx, now);
    if (!again) options.lockWait?.observe((performance.now() - member.asked) / 1000);
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
      // The events keep this span's trace parent: their webhook attempts are its children.
      // In a group (PostgreSQL) every member's events go in one statement, before its COMMIT.
      await inChildSpan('append events', { 'supplyline.events': member.events.length }, () =>
        atCommit(trx, scope.businessId, appendWrites, [
          { meta: ctx, events: member.events, traceParent: activeTraceParent() ?? scope.traceParent ?? null },
        ]),
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
      atCommit: [],
      asked: performance.now(),
      context: new AsyncResource('write'),
    };
    const written = grouped
      ? groups.join(
          scope.businessId,
          (trx, joined) => member.context.runInAsyncScope(() => write(trx, member, joined)),
          member,
          scope.long,
        )
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
  /** Why the business of each open transaction takes no writes, as its clock row said (null: it does). */
  const closedIn = new WeakMap<Transaction<Database>, string | null>();
  // Before a group's COMMIT: what the writes it keeps collected (their events, the read model's
  // counts), one statement each; and, as its writes after the first took their times without the
  // clock, the clock, stored once.
  const groups = new WriteGroups(db, async (trx, businessId, kept, joined) => {
    await flushCollected(
      trx,
      businessId,
      (kept as Member<unknown>[]).map((m) => m.atCommit),
    );
    if (joined) await keepWriteTime(trx, businessId, lastTimes.get(trx)!);
  });

  return {
    run: (scope, work) => inTransaction(scope, null, work),

    runIdempotent: (scope, idempotency, work) =>
      runIdempotent(
        db,
        { ttlMs, clock, box: options.box, inFlight },
        scope,
        idempotency,
        (key, inner) => inTransaction(scope, key, inner),
        work,
      ),
  };
}

/** What a service's write returns: the resource as the API shows it now, and as it was before, where it existed. */
export interface Written<T> {
  resource: T;
  before: T | null;
  /** An update that would have changed nothing a GET shows, and so wrote nothing (src/write/update.ts). */
  unchanged?: true;
}
