import { AsyncResource } from 'node:async_hooks';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { routesPerRequest } from '../db/replicas/index.ts';
import { statementsAreRoundTrips } from '../db/dialect.ts';
import type { Database, Db } from '../db/types.ts';
import { whereLive } from '../db/live.ts';
import { ID_PATTERN } from '../lib/ids.ts';
import type { OrderItemRow, OrderRow } from './mapper.ts';

/** A statement shared by several requests runs in none of their contexts (traces): in the module's. */
const OUTSIDE = new AsyncResource('shared order reads');
/** At most this many orders in one statement. */
const MAX_BATCH = 256;

type Owned = { business_id: string };

interface Wanted<R> {
  businessId: string;
  id: string;
  resolve(rows: R[]): void;
  reject(error: unknown): void;
}

/**
 * Reads of one live order's rows by its id outside a write, shared on PostgreSQL (decision 0053): while one
 * statement is on its way, the next requests' reads wait and then go together, in one statement
 * by primary key. As group commit (src/write/groups.ts), a read alone costs what it did, and under
 * load one round trip answers many. Every read is answered by a statement sent after it asked, so
 * no request sees an order older than a write answered before it arrived. Not on a database that
 * routes each request's statements to a replica of its choice (src/db/replicas): each reads there.
 */
class SharedReads<R extends Owned> {
  readonly #db: Kysely<Database>;
  readonly #select: (ids: string[]) => RawBuilder<R>;
  /** The order id a row belongs to. */
  readonly #orderOf: (row: R) => string;
  readonly #waiting: Array<Wanted<R>> = [];
  #reading = false;

  constructor(db: Kysely<Database>, select: (ids: string[]) => RawBuilder<R>, orderOf: (row: R) => string) {
    this.#db = db;
    this.#select = select;
    this.#orderOf = orderOf;
  }

  /** The order's rows, in the statement's order; none for another business's order. */
  read(businessId: string, id: string): Promise<R[]> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ businessId, id, resolve, reject });
      if (!this.#reading) void OUTSIDE.runInAsyncScope(() => this.#drain());
    });
  }

  async #drain(): Promise<void> {
    this.#reading = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, MAX_BATCH);
      try {
        const { rows } = await this.#select(planned([...new Set(batch.map((w) => w.id))])).execute(this.#db);
        const found = new Map<string, R[]>();
        for (const row of rows) {
          const id = this.#orderOf(row);
          const of = found.get(id);
          if (of) of.push(row);
          else found.set(id, [row]);
        }
        for (const wanted of batch) {
          // Another business's order is not found: the id is unique, the business checked here.
          wanted.resolve((found.get(wanted.id) ?? []).filter((row) => row.business_id === wanted.businessId));
        }
      } catch (error) {
        for (const wanted of batch) wanted.reject(error);
      }
    }
    this.#reading = false;
  }
}

/**
 * A statement's ids, at least PLANNED_IDS of them: the batch's, then its last one again. PostgreSQL
 * costs a kept (generic) plan of `id = any($1)` as for 10 ids, so with fewer it planned the statement
 * afresh at every run, at 100–140 µs of its CPU (decision 0068); at 10 the kept plan is as cheap,
 * and is kept. The index scan reads each distinct id once, so no row comes twice.
 */
const PLANNED_IDS = 10;
function planned(ids: string[]): string[] {
  return ids.length >= PLANNED_IDS ? ids : [...ids, ...Array<string>(PLANNED_IDS - ids.length).fill(ids.at(-1)!)];
}

type Stamped = Owned & { id: string; version: number | string; ingested: boolean | number };

// What a cached GET and a repeated announcement need of an order: no JSON column to parse.
const selectStamps = (ids: string[]) =>
  sql<Stamped>`select id, business_id, version, ingested_at is not null as ingested
      from orders where id = any(${ids}::text[]) and ${whereLive()}`;
const selectRows = (ids: string[]) =>
  sql<OrderRow>`select * from orders where id = any(${ids}::text[]) and ${whereLive()}`;
// In line order, as src/orders/repository.ts reads one order's items.
const selectItems = (ids: string[]) =>
  sql<OrderItemRow>`select * from order_items where order_id = any(${ids}::text[]) order by line_number, id`;

const stamps = new WeakMap<Kysely<Database>, SharedReads<Stamped>>();
const rows = new WeakMap<Kysely<Database>, SharedReads<OrderRow>>();
const items = new WeakMap<Kysely<Database>, SharedReads<OrderItemRow>>();

const ID = new RegExp(ID_PATTERN);

/**
 * The database's shared reads of one kind, where they pay: statements are round trips and `db` is
 * no transaction. Only for an id of the API's shape, so that no text one request sends (a NUL byte
 * PostgreSQL refuses) can fail the statement of the others.
 */
function sharedOf<R extends Owned>(
  db: Db,
  id: string,
  kind: WeakMap<Kysely<Database>, SharedReads<R>>,
  select: (ids: string[]) => RawBuilder<R>,
  orderOf: (row: R) => string,
): SharedReads<R> | undefined {
  if (!statementsAreRoundTrips(db) || db.isTransaction || routesPerRequest(db) || !ID.test(id)) return undefined;
  let reads = kind.get(db);
  if (!reads) {
    reads = new SharedReads(db, select, orderOf);
    kind.set(db, reads);
  }
  return reads;
}

/** What one query tells of a live order: its version, and whether it was announced (POST /orders). */
export interface OrderStamp {
  version: number;
  ingested: boolean;
}

/** A live order's stamp (a cached GET's and a repeated announcement's one query), or undefined. */
export async function readOrderStamp(db: Db, businessId: string, id: string): Promise<OrderStamp | undefined> {
  const shared = sharedOf(db, id, stamps, selectStamps, (row) => row.id);
  const [row] = shared
    ? await shared.read(businessId, id)
    : (
        await sql<Stamped>`select version, ingested_at is not null as ingested
            from orders where business_id = ${businessId} and id = ${id} and ${whereLive()}`.execute(db)
      ).rows;
  return row && { version: Number(row.version), ingested: Boolean(row.ingested) };
}

/** A live order's version, or undefined. */
export const readOrderVersion = async (db: Db, businessId: string, id: string): Promise<number | undefined> =>
  (await readOrderStamp(db, businessId, id))?.version;

/** A live order's row read outside a write, shared with other requests' where that pays; undefined elsewhere. */
export async function readOrderRowShared(db: Db, businessId: string, id: string): Promise<OrderRow | undefined | null> {
  const shared = sharedOf(db, id, rows, selectRows, (row) => row.id);
  return shared ? (await shared.read(businessId, id))[0] : null;
}

/** An order's items read outside a write, shared where that pays; null elsewhere. */
export async function readOrderItemsShared(db: Db, businessId: string, id: string): Promise<OrderItemRow[] | null> {
  const shared = sharedOf(db, id, items, selectItems, (row) => row.order_id);
  return shared ? shared.read(businessId, id) : null;
}
