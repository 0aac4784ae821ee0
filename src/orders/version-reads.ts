import { type Kysely, sql } from 'kysely';
import { statementsAreRoundTrips } from '../db/dialect.ts';
import type { Database, Db } from '../db/types.ts';
import { whereLive } from '../db/live.ts';

/** At most this many orders' versions in one statement. */
const MAX_BATCH = 256;

type Versioned = { id: string; business_id: string; version: number | string };

interface Wanted {
  businessId: string;
  id: string;
  resolve(version: number | undefined): void;
  reject(error: unknown): void;
}

/**
 * Version checks of cached GETs on PostgreSQL, shared (decision 0053): while one statement reading
 * live orders' versions is on its way, the next requests' checks wait and then go together, in one
 * statement by primary key. As group commit (src/write/groups.ts), alone it costs what it did, and
 * under load one round trip answers many. Every check is read by a statement sent after its
 * request asked, so no request sees a version older than a write answered before it arrived.
 */
class VersionReads {
  readonly #db: Kysely<Database>;
  readonly #waiting: Wanted[] = [];
  #reading = false;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  read(businessId: string, id: string): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ businessId, id, resolve, reject });
      if (!this.#reading) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#reading = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      try {
        const ids = [...new Set(batch.map((w) => w.id))];
        const { rows } = await sql<Versioned>`select id, business_id, version from orders
          where id = any(${ids}::text[]) and ${whereLive()}`.execute(this.#db);
        const found = new Map(rows.map((r) => [r.id, r]));
        for (const wanted of batch) {
          const row = found.get(wanted.id);
          // Another business's order is not found (tenants are isolated by the id's owner).
          wanted.resolve(row && row.business_id === wanted.businessId ? Number(row.version) : undefined);
        }
      } catch (error) {
        for (const wanted of batch) wanted.reject(error);
      }
    }
    this.#reading = false;
  }
}

const shared = new WeakMap<Kysely<Database>, VersionReads>();

/** A live order's version, or undefined; in one statement of its own where statements are cheap (SQLite) or `db` is a transaction. */
export async function readOrderVersion(db: Db, businessId: string, id: string): Promise<number | undefined> {
  if (statementsAreRoundTrips(db) && !db.isTransaction) {
    let reads = shared.get(db);
    if (!reads) {
      reads = new VersionReads(db);
      shared.set(db, reads);
    }
    return reads.read(businessId, id);
  }
  const {
    rows: [stamp],
  } = await sql<{ version: number | string }>`select version
      from orders where business_id = ${businessId} and id = ${id} and ${whereLive()}`.execute(db);
  return stamp && Number(stamp.version);
}
