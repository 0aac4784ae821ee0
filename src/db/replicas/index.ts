import { AsyncLocalStorage } from 'node:async_hooks';
import { Kysely } from 'kysely';
import pg from 'pg';
import { PoolerSafePostgresDialect } from '../migration-lock.ts';
import type { OpenSnapshot } from '../snapshot.ts';
import type { Database } from '../types.ts';
import { parsePosition, PRIMARY_POSITION, SharedQuery, withTimeout, type Position } from './position.ts';
import { Replica, UNREACHABLE, type ReplicaOptions, type ReplicaStatus } from './replica.ts';
import { watched } from './watched.ts';

export { formatPosition, parsePosition, type Position } from './position.ts';
export type { ReplicaOptions, ReplicaStatus } from './replica.ts';

export type ReadTarget = 'primary' | 'replica';

/** One request's read: what it must see, and the database it was given (kept for all its statements). */
export interface Read {
  /** A position the caller asked for (`Consistent-After`), on top of what the read must see anyway. */
  readonly after: Position | null;
  /** The primary's position when the read chose: everything committed before it began. */
  position: Position | null;
  choice: Promise<Choice> | null;
  /** Whether the read has been counted (`onChoice`): once, by the database it first used. */
  counted: boolean;
}

interface Choice {
  target: ReadTarget;
  connect(): Promise<pg.PoolClient>;
  openSnapshot: OpenSnapshot;
  replica?: Replica;
  /** How long the choice took, in seconds. */
  seconds?: number;
}

interface Primary {
  connect(): Promise<pg.PoolClient>;
  openSnapshot: OpenSnapshot;
}

const reads = new AsyncLocalStorage<Read>();
/** The databases that route each statement by the request it runs for (`ReadReplicas.db`). */
const routed = new WeakSet<object>();

/** Whether `db` sends a statement where the request it runs for chose: statements of several requests must not be shared on it. */
export function routesPerRequest(db: object): boolean {
  return routed.has(db);
}
const PROBE_MS = 1000;
const PROBE_TIMEOUT_MS = 2000;

/**
 * Reads after this, in the current request, choose their database again: a long poll woken by a
 * commit made after it began must see that commit.
 */
export function readAgain(): void {
  const read = reads.getStore();
  if (read) read.choice = null;
}

/**
 * Streaming replicas for reads (DATABASE_REPLICA_URLS). A request that may read from a replica runs
 * in `run`; its first statement through `db` chooses: the primary's position is read (shared by the
 * reads of one event-loop turn) and so is each replica's replay position, and a replica that has
 * replayed that far serves every statement of the request. None has: the primary does.
 */
export class ReadReplicas {
  readonly replicas: Replica[];
  /** Routes a statement to the request's choice; to the primary outside a read. */
  readonly db: Kysely<Database>;
  /** The routed `openSnapshot`: an export's snapshot on the request's choice. */
  readonly openSnapshot: OpenSnapshot;
  /**
   * Called once per read, when it first uses a database: where it went (the primary when its replica
   * could not be reached) and how long the choice took (seconds).
   */
  onChoice: (target: ReadTarget, seconds: number) => void = () => {};
  readonly #primary: Primary;
  readonly #positions: pg.Pool;
  readonly #position: SharedQuery<Position>;
  #turn = 0;
  #timer: NodeJS.Timeout | null = null;
  #probing: Promise<void> | null = null;

  constructor(primaryUrl: string, primary: Primary, urls: readonly string[], options: ReplicaOptions = {}) {
    this.#primary = primary;
    this.replicas = urls.map((url) => new Replica(url, options));
    this.#positions = new pg.Pool({ connectionString: primaryUrl, max: 2, connectionTimeoutMillis: 5000 });
    this.#positions.on('error', () => {});
    this.#positions.on('connect', (client) => client.on('error', () => {}));
    this.#position = new SharedQuery(async () => {
      const { rows } = await this.#positions.query<{ position: string }>(PRIMARY_POSITION);
      return parsePosition(rows[0]!.position)!;
    });
    const pool = { connect: () => this.#connect(), end: async () => {} };
    this.db = new Kysely<Database>({ dialect: new PoolerSafePostgresDialect({ pool }) });
    routed.add(this.db);
    this.openSnapshot = async () => {
      const read = reads.getStore();
      return read ? this.#open(read, (choice) => choice.openSnapshot()) : this.#primary.openSnapshot();
    };
  }

  /** A read that must see everything committed before now, and `after`. */
  newRead(after: Position | null): Read {
    return { after, position: null, choice: null, counted: false };
  }

  /** Runs `work`, and everything it starts, as `read`. */
  run<T>(read: Read, work: () => T): T {
    return reads.run(read, work);
  }

  /** The primary's position now: a point every transaction committed so far is before. */
  positionNow(): Promise<Position> {
    return this.#position.get();
  }

  /** Primary position queries sent, for the benchmark. */
  get positionQueries(): number {
    return this.#position.sent;
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((r) => r.status());
  }

  /** Probes every replica now and then: a failed one is taken out, and back in once it answers again. */
  start(): void {
    if (this.#timer) return;
    void this.probe();
    this.#timer = setInterval(() => void this.probe(), PROBE_MS).unref();
  }

  probe(): Promise<void> {
    this.#probing ??= this.#probeAll().finally(() => {
      this.#probing = null;
    });
    return this.#probing;
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#probing;
    await Promise.all([this.#positions.end(), ...this.replicas.map((r) => r.close())]);
  }

  /**
   * Each replica's answer first, then the primary's position: a standby has replayed only what the
   * primary flushed before, so one found past that position follows another history (`Replica.judge`).
   */
  async #probeAll(): Promise<void> {
    const answers = await Promise.all(
      this.replicas.map((replica) =>
        withTimeout(replica.check(), PROBE_TIMEOUT_MS).then(
          (row) => (row === undefined ? ('no answer to the probe within 2 s' as const) : row),
          (error: Error) => error,
        ),
      ),
    );
    let primary: Position | null = null;
    let system: string | null = null;
    try {
      // Asked at every probe: after a failover DATABASE_URL may name another cluster.
      system = (
        await this.#positions.query<{ system: string }>(
          'select system_identifier::text as system from pg_control_system()',
        )
      ).rows[0]!.system;
      primary = await this.positionNow();
    } catch {
      // The replicas are still judged, and taken out: they cannot be checked against the primary.
    }
    this.replicas.forEach((replica, i) => {
      const answer = answers[i]!;
      if (typeof answer === 'string') replica.cutOff(answer);
      else if (answer instanceof Error) replica.cutOff(UNREACHABLE, answer);
      else replica.judge(answer, primary, system);
    });
  }

  #choice(read: Read): Promise<Choice> {
    read.choice ??= this.#choose(read);
    return read.choice;
  }

  async #choose(read: Read): Promise<Choice> {
    const started = performance.now();
    const primary: Choice = { target: 'primary', ...this.#primary };
    const live = this.replicas.filter((r) => r.up);
    let choice = primary;
    // Read even when no replica is live, so that every read's answer names its position.
    const [position, replayed] = await Promise.all([
      this.positionNow().catch(() => null),
      Promise.all(live.map((r) => r.replay())),
    ]);
    if (position !== null) {
      read.position = position;
      const needed = read.after !== null && read.after > position ? read.after : position;
      const first = live.length > 0 ? this.#turn++ % live.length : 0;
      for (let i = 0; i < live.length; i++) {
        const at = (first + i) % live.length;
        const replica = live[at]!;
        const replay = replayed[at];
        if (replay !== null && replay !== undefined && replay >= needed) {
          choice = { target: 'replica', connect: replica.connect, openSnapshot: replica.openSnapshot, replica };
          break;
        }
      }
    }
    choice.seconds = (performance.now() - started) / 1000;
    return choice;
  }

  #counted(read: Read, choice: Choice): Choice {
    if (!read.counted) {
      read.counted = true;
      this.onChoice(choice.target, choice.seconds ?? 0);
    }
    return choice;
  }

  async #connect(): Promise<pg.PoolClient> {
    const read = reads.getStore();
    if (!read) return this.#primary.connect();
    return this.#open(read, async (choice) =>
      choice.replica ? watched(await choice.connect(), choice.replica, this.#onPrimary) : choice.connect(),
    );
  }

  /**
   * A connection or an export's snapshot where `read` has chosen, counted once by where it is served.
   * Every connection to its replica taken: the primary now rather than a wait, and the replica stays
   * up. The replica gone since it was chosen: taken out, and this read (every statement of it) goes
   * to the primary; nothing of it was read yet.
   */
  async #open<T>(read: Read, open: (choice: Choice) => Promise<T>): Promise<T> {
    const choice = await this.#choice(read);
    if (!choice.replica) return open(this.#counted(read, choice));
    if (choice.replica.busy) return open(this.#counted(read, this.#toPrimary(read, choice.seconds)));
    try {
      const opened = await open(choice);
      this.#counted(read, choice);
      return opened;
    } catch (error) {
      choice.replica.takeOut(UNREACHABLE, error);
      return open(this.#counted(read, this.#toPrimary(read, choice.seconds)));
    }
  }

  /** The rest of `read` goes to the primary. */
  #toPrimary(read: Read, seconds?: number): Choice {
    const primary: Choice = { target: 'primary', ...this.#primary, seconds };
    read.choice = Promise.resolve(primary);
    return primary;
  }

  /** A statement its replica lost, sent again on the primary, where the rest of its read goes too. */
  readonly #onPrimary = async (args: unknown[]): Promise<unknown> => {
    const read = reads.getStore();
    const client = await (read ? this.#toPrimary(read) : this.#primary).connect();
    try {
      return await (client.query as (...args: unknown[]) => Promise<unknown>)(...args);
    } finally {
      client.release();
    }
  };
}
