import pg from 'pg';
import { preparingPool } from '../pg-prepared.ts';
import { watched } from './watched.ts';
import { postgresSnapshots, type OpenSnapshot } from '../snapshot.ts';
import { formatPosition, parsePosition, SharedQuery, withTimeout, type Position } from './position.ts';
import { serviceTypes } from '../pg-types.ts';

export interface ReplicaOptions {
  /** The schema every connection uses (tests give each run its own). */
  schema?: string;
  poolSize?: number;
  prepare?: boolean;
}

export interface ReplicaStatus {
  /** Host, port and database: the URL without its user and password. */
  name: string;
  state: 'up' | 'down';
  /** What it has replayed (`pg_last_wal_replay_lsn()`). */
  replayed: string | null;
  lagBytes: number | null;
  lagSeconds: number | null;
  /** Why it is down: one of a few fixed texts (the log has the driver's message). */
  reason?: string;
}

/** Why a replica is down when the driver failed: what it said is logged, not shown (`/readyz`). */
export const UNREACHABLE =
  'it could not be reached, or it failed a statement: connection refused or lost, shut down, or cancelled by replay';

/**
 * What the probe reads of a replica. `readable`: Supplyline's tables are there and its role may read
 * them (null: no `orders` table on its search path, the wrong database or schema).
 */
const PROBE = `select pg_is_in_recovery() as recovering,
  pg_last_wal_replay_lsn()::text as replayed,
  (select system_identifier::text from pg_control_system()) as system,
  (select has_table_privilege(t, 'select') from to_regclass('orders') t) as readable`;

/** A replica's answer to the probe. */
export interface ProbeRow {
  recovering: boolean;
  replayed: string | null;
  system: string;
  readable: boolean | null;
}

const NOT_CHECKED = 'not checked yet';
/** A snapshot's statements are all in its transaction, and none runs again elsewhere. */
const NEVER_AGAIN = () => Promise.reject(new Error("a snapshot's statement never runs again elsewhere"));
/** Positions kept for the lag; past this the second oldest goes, so the oldest, which it is measured from, stays. */
const LAG_MEMORY = 600;
/** How long a read waits for a replica's replay position before it takes the replica out and goes on without it. */
export const REPLAY_WAIT_MS = 500;

/** One streaming replica: its pool, what it has replayed, and whether reads may go to it. */
export class Replica {
  readonly name: string;
  readonly pool: pg.Pool;
  readonly connect: () => Promise<pg.PoolClient>;
  readonly openSnapshot: OpenSnapshot;
  up = false;
  reason: string | null = NOT_CHECKED;
  /** Told when it is taken out or put back (the server logs it). */
  report: (message: string) => void = () => {};
  replayed: Position | null = null;
  lagBytes: number | null = null;
  lagSeconds: number | null = null;
  readonly #replay: SharedQuery<Position | null>;
  readonly #lag = new Lag();
  /** The probe's and the replay position's own connections: reads that fill `pool` do not hold them. */
  readonly #checks: pg.Pool;
  /** The reads' clients out of `pool` now: cut when the replica stops answering (`cutOff`). */
  readonly #lent = new Set<pg.PoolClient>();

  constructor(url: string, options: ReplicaOptions) {
    const parsed = new URL(url);
    this.name = `${parsed.host}${parsed.pathname}`;
    const settings = {
      connectionString: url,
      connectionTimeoutMillis: 2000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      types: serviceTypes,
      options: options.schema ? `-c search_path=${options.schema}` : undefined,
    };
    this.pool = new pg.Pool({ ...settings, max: options.poolSize ?? 10 });
    this.#checks = new pg.Pool({ ...settings, max: 2 });
    // As for the primary's pool: a lost connection reports on its next query, never crashes the process.
    for (const pool of [this.pool, this.#checks]) {
      pool.on('error', () => {});
      pool.on('connect', (client) => client.on('error', () => {}));
    }
    const prepared = preparingPool(this.pool, { naming: options.prepare !== false });
    this.connect = async () => this.#lend(await prepared.connect());
    // An export's transaction is watched too: a lost replica or a replay's cancel is its 503, and cut when it stalls.
    this.openSnapshot = postgresSnapshots({ connect: async () => watched(await this.connect(), this, NEVER_AGAIN) });
    this.#replay = new SharedQuery(async () => {
      const { rows } = await this.#query<{ replayed: string | null }>(
        'select pg_last_wal_replay_lsn()::text as replayed',
      );
      return rows[0]?.replayed ? parsePosition(rows[0].replayed) : null;
    });
  }

  /**
   * What it has replayed now (one query per turn of the event loop); null, and taken out, when it
   * cannot say within `waitMs`: a replica that stalls does not hold the reads choosing.
   */
  async replay(waitMs = REPLAY_WAIT_MS): Promise<Position | null> {
    try {
      const answer = this.#replay.get();
      let replayed = await withTimeout(answer, waitMs);
      // The wait ran out while the event loop was held (a long collection, a large render): an answer
      // already in the socket is read in the turn's I/O, before its `setImmediate`.
      if (replayed === undefined)
        replayed = await Promise.race([
          answer,
          new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined))),
        ]);
      if (replayed === undefined) {
        this.cutOff(`no answer to its replay position within ${waitMs} ms`);
        return null;
      }
      if (replayed === null) this.takeOut('not a standby (pg_is_in_recovery() is false): promoted?');
      else if (this.replayed === null || replayed > this.replayed) this.replayed = replayed;
      return replayed;
    } catch (error) {
      this.cutOff(UNREACHABLE, error);
      return null;
    }
  }

  /** Whether a read would wait for one of its connections: every one is out. */
  get busy(): boolean {
    return this.pool.totalCount >= (this.pool.options.max ?? 10) && this.pool.idleCount === 0;
  }

  #lend(client: pg.PoolClient): pg.PoolClient {
    if (!this.#lent.has(client)) {
      this.#lent.add(client);
      const release = client.release.bind(client);
      client.release = (error?: Error | boolean) => {
        this.#lent.delete(client);
        client.release = release;
        return release(error);
      };
    }
    return client;
  }

  /**
   * Taken out for not answering, and the reads' connections to it cut: a statement waiting on a
   * replica that stalled fails at once, and runs again on the primary (`watched`) instead of waiting
   * for TCP to give up.
   */
  cutOff(reason: string, error?: unknown): void {
    this.takeOut(reason, error);
    for (const client of this.#lent)
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }

  /** A statement on it failed for want of it (`watched`). */
  lost(error: unknown): void {
    this.takeOut(UNREACHABLE, error);
  }

  /** Reads go elsewhere; `reason` is shown, and the driver's `error`, if any, logged. */
  takeOut(reason: string, error?: unknown): void {
    if (this.up || this.reason === NOT_CHECKED) {
      const said = error instanceof Error ? ` (${error.message})` : '';
      this.report(`Replica ${this.name} is taken out: ${reason}${said}`);
    }
    this.up = false;
    this.reason = reason;
  }

  #putBack(): void {
    if (!this.up) this.report(`Replica ${this.name} is up: reads may go to it`);
    this.up = true;
    this.reason = null;
  }

  /** The probe's query; its answer is judged once the primary's position is read after it (`judge`). */
  async check(): Promise<ProbeRow> {
    return (await this.#query<ProbeRow>(PROBE)).rows[0]!;
  }

  /**
   * Up when it answers, is a standby of the primary's cluster with Supplyline's tables, and has not
   * replayed past `primary`, the primary's position read after its answer. A standby can replay only
   * what the primary flushed, so one past it follows another history: left on an old timeline by a
   * failover, or a standby of a promoted copy. Its rows are not the primary's, and would be read as
   * current until the primary caught up with its position.
   */
  judge(row: ProbeRow, primary: Position | null, primarySystem: string | null, now = Date.now()): void {
    const fault = faultOf(row, primary, primarySystem);
    if (fault !== null) {
      this.takeOut(fault);
      return;
    }
    const replayed = parsePosition(row.replayed!)!;
    this.replayed = replayed;
    this.lagBytes = Number(primary! - replayed);
    this.lagSeconds = this.#lag.behind(primary!, replayed, now);
    this.#putBack();
  }

  #query<R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>> {
    return this.#checks.query<R>(text);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.end(), this.#checks.end()]);
  }

  status(): ReplicaStatus {
    return {
      name: this.name,
      state: this.up ? 'up' : 'down',
      replayed: this.replayed === null ? null : formatPosition(this.replayed),
      lagBytes: this.lagBytes,
      lagSeconds: this.lagSeconds,
      ...(this.reason === null ? {} : { reason: this.reason }),
    };
  }
}

/** Why reads may not go to a replica that answered the probe with `row`, or null. */
function faultOf(row: ProbeRow, primary: Position | null, primarySystem: string | null): string | null {
  if (!row.recovering || row.replayed === null) return 'not a standby (pg_is_in_recovery() is false)';
  if (primarySystem === null || primary === null)
    return 'the primary (DATABASE_URL) did not answer, so the replica could not be checked against it';
  if (row.system !== primarySystem) return 'a replica of another cluster than DATABASE_URL';
  if (row.readable === null) return "Supplyline's tables are not in this database (the wrong database or schema?)";
  if (!row.readable) return "its user may not read Supplyline's tables";
  if (parsePosition(row.replayed)! > primary)
    return "it has replayed past the primary's position: it follows another history (left on an old timeline by a failover?)";
  return null;
}

/**
 * How far behind a replica is in time: since when the primary has been at a position the replica has
 * not replayed yet, from the positions the probes saw (one a second). It needs no privilege and no
 * transaction timestamps, so it also grows for a replica that stopped receiving WAL.
 */
class Lag {
  /** The primary's positions the replica had not replayed when seen, oldest first, with when. */
  readonly #seen: Array<{ position: Position; at: number }> = [];

  behind(primary: Position, replayed: Position, now: number): number {
    const seen = this.#seen;
    while (seen.length > 0 && seen[0]!.position <= replayed) seen.shift();
    if (primary > replayed && (seen.length === 0 || seen.at(-1)!.position < primary)) {
      seen.push({ position: primary, at: now });
      if (seen.length > LAG_MEMORY) seen.splice(1, 1);
    }
    return seen.length === 0 ? 0 : (now - seen[0]!.at) / 1000;
  }
}
