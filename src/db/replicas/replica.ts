import pg from 'pg';
import { preparingPool } from '../pg-prepared.ts';
import { postgresSnapshots, type OpenSnapshot } from '../snapshot.ts';
import { formatPosition, parsePosition, SharedQuery, type Position } from './position.ts';
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
  /** Why it is down. */
  reason?: string;
}

const PROBE = `select pg_is_in_recovery() as recovering,
  pg_last_wal_replay_lsn()::text as replayed,
  pg_last_wal_receive_lsn()::text as received,
  extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 as behind,
  (select system_identifier::text from pg_control_system()) as system`;

/** One streaming replica: its pool, what it has replayed, and whether reads may go to it. */
export class Replica {
  readonly name: string;
  readonly pool: pg.Pool;
  readonly connect: () => Promise<pg.PoolClient>;
  readonly openSnapshot: OpenSnapshot;
  up = false;
  reason: string | null = 'not checked yet';
  replayed: Position | null = null;
  lagBytes: number | null = null;
  lagSeconds: number | null = null;
  readonly #replay: SharedQuery<Position | null>;

  constructor(url: string, options: ReplicaOptions) {
    const parsed = new URL(url);
    this.name = `${parsed.host}${parsed.pathname}`;
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 2000,
      types: serviceTypes,
      options: options.schema ? `-c search_path=${options.schema}` : undefined,
    });
    // As for the primary's pool: a lost connection reports on its next query, never crashes the process.
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
    const prepared = preparingPool(this.pool, { naming: options.prepare !== false });
    this.connect = () => prepared.connect();
    this.openSnapshot = postgresSnapshots(this.pool);
    this.#replay = new SharedQuery(async () => {
      const { rows } = await this.#query<{ replayed: string | null }>(
        'select pg_last_wal_replay_lsn()::text as replayed',
      );
      return rows[0]?.replayed ? parsePosition(rows[0].replayed) : null;
    });
  }

  /** What it has replayed now (one query per turn of the event loop); null, and taken out, when it cannot say. */
  async replay(): Promise<Position | null> {
    try {
      const replayed = await this.#replay.get();
      if (replayed === null) this.takeOut('not a standby (pg_is_in_recovery() is false): promoted?');
      else if (this.replayed === null || replayed > this.replayed) this.replayed = replayed;
      return replayed;
    } catch (error) {
      this.takeOut((error as Error).message);
      return null;
    }
  }

  takeOut(reason: string): void {
    this.up = false;
    this.reason = reason;
  }

  /** The periodic check: up when it answers, is a standby, and replays the primary's cluster. */
  async probe(primary: Position | null, primarySystem: string | null): Promise<void> {
    try {
      const { rows } = await this.#query<{
        recovering: boolean;
        replayed: string | null;
        received: string | null;
        behind: number | null;
        system: string;
      }>(PROBE);

      const row = rows[0]!;
      if (!row.recovering || row.replayed === null) return this.takeOut('not a standby (pg_is_in_recovery() is false)');
      if (primarySystem !== null && row.system !== primarySystem)
        return this.takeOut('a replica of another cluster than DATABASE_URL');
      const replayed = parsePosition(row.replayed)!;
      this.replayed = replayed;
      this.lagBytes = primary === null ? null : Math.max(0, Number(primary - replayed));
      // Nothing received waits to be replayed: no lag, however long ago the last transaction was.
      this.lagSeconds = row.received === row.replayed ? 0 : Math.max(0, row.behind ?? 0);
      this.up = true;
      this.reason = null;
    } catch (error) {
      this.takeOut((error as Error).message);
    }
  }

  /** `pool.query` would hand its callback to a client whose `query` preparingPool replaced: a client of its own. */
  async #query<R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>> {
    const client = await this.connect();
    try {
      const result = await client.query<R>(text);
      client.release();
      return result;
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
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
