import { insertRows } from '../../db/bulk.ts';
import type { Db } from '../../db/types.ts';
import { changeDay } from './change-counts.ts';
import type { ProjectedOrder } from './projections.ts';
import { SIDE_TABLES, type Side } from './properties.ts';
import { propertyPaths } from './property-values.ts';

/**
 * The derived tables of a new business's orders, made while a load writes the orders directly (the
 * demo generator): reading them back, parsing and grouping them afterwards was a large share of a
 * load. The same rows `rebuildOrderProjections` makes, from the functions the upkeep uses
 * (`propertyPaths`, `changeDay`). The property rows go in with each batch of orders; the counts are
 * added to their tables whenever a tally grows large, and the rest after the last batch.
 */
export interface ProjectionLoad {
  /** The property rows of a batch of orders, counted as they are added. */
  batch(): ProjectionBatch;
  /** Writes the count tables, in the caller's transaction, after the last batch is inserted. */
  finish(db: Db): Promise<void>;
}

export interface ProjectionBatch {
  /** An order as stored; `properties` its properties parsed, when the caller has them so. */
  add(order: ProjectedOrder, properties?: unknown): void;
  /** Inserts the batch's property rows, in the caller's transaction, after its orders. */
  insert(db: Db): Promise<void>;
}

/**
 * Counts by key, each key its parts joined in one string, and nothing else kept per key. Since the
 * path and change counts are by day (migrations 0022 and 0023) a large load has many keys: held to
 * the end, each with an array of its parts and a record, they grew the load's peak memory
 * (docs/performance.md). Now a tally is also written out whenever it grows large.
 */
export class Tally {
  readonly #counts = new Map<string, number>();
  /** How many parts a key has. */
  private readonly arity: number;
  constructor(arity: number) {
    this.arity = arity;
  }

  /** How many keys it holds. */
  get size(): number {
    return this.#counts.size;
  }

  clear(): void {
    this.#counts.clear();
  }

  add(...parts: string[]): void {
    const key = parts.join(SEPARATOR);
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /**
   * Each key's parts and its count, as rows, `size` at a time: all of them at once were the load's
   * peak. The first part (a property path) may hold the separator, the others never.
   */
  *chunks(size: number): Generator<unknown[][]> {
    let rows: unknown[][] = [];
    for (const [key, n] of this.#counts) {
      const parts = key.split(SEPARATOR);
      const cut = parts.length - this.arity + 1;
      rows.push([parts.slice(0, cut).join(SEPARATOR), ...parts.slice(cut), n]);
      if (rows.length === size) {
        yield rows;
        rows = [];
      }
    }
    if (rows.length > 0) yield rows;
  }
}

const SEPARATOR = '\u0000';

/** What each side (live or soft-deleted orders) counts by day, table by table, as the rebuild groups them. */
function sideTallies() {
  return { changed: new Tally(2), created: new Tally(3), paths: new Tally(4) };
}

type SideTallies = ReturnType<typeof sideTallies>;

/** Each count table with its key columns (besides business_id and shard) and the tally it is written from. */
function countTargets(
  counts: Tally,
  live: SideTallies,
  deleted: SideTallies,
): Array<{ table: string; columns: string[]; tally: Tally }> {
  return [
    { table: 'order_counts', columns: ['phase', 'status'], tally: counts },
    { table: 'order_change_counts', columns: ['day', 'created_day'], tally: live.changed },
    { table: 'order_deleted_change_counts', columns: ['day', 'created_day'], tally: deleted.changed },
    { table: 'order_created_counts', columns: ['day', 'phase', 'status'], tally: live.created },
    { table: 'order_deleted_counts', columns: ['day', 'phase', 'status'], tally: deleted.created },
    { table: SIDE_TABLES.live.counts, columns: ['path', 'day', 'phase', 'status'], tally: live.paths },
    { table: SIDE_TABLES.deleted.counts, columns: ['path', 'day', 'phase', 'status'], tally: deleted.paths },
  ];
}

/**
 * Keys a tally holds before they are written. Orders are made in time order, so a day's keys
 * mostly come together and are seldom written twice, and the tallies stay small.
 */
const HELD_KEYS = 10_000;

/** Adds the counts of each tally holding at least `least` keys to its table (upserts), and empties it. */
async function writeCounts(
  db: Db,
  businessId: string,
  targets: ReturnType<typeof countTargets>,
  least: number,
): Promise<void> {
  for (const { table, columns, tally } of targets) {
    if (tally.size < least) continue;
    const upsert = { key: ['business_id', ...columns, 'shard'], add: 'n' };
    for (const rows of tally.chunks(1_000)) {
      await insertRows(
        db,
        table,
        [...columns, 'n'],
        rows,
        { business_id: businessId, shard: 0 },
        { addOnConflict: upsert },
      );
    }
    tally.clear();
  }
}

export function createProjectionLoad(businessId: string, heldKeys = HELD_KEYS): ProjectionLoad {
  const sides = { live: sideTallies(), deleted: sideTallies() };
  // Live orders per (phase, status); soft-deleted ones are counted by day only.
  const counts = new Tally(2);
  const targets = countTargets(counts, sides.live, sides.deleted);
  return {
    batch() {
      const rows: Record<Side, unknown[][]> = { live: [], deleted: [] };
      return {
        add(order, properties = order.properties) {
          const side: Side = order.deleted_at === null ? 'live' : 'deleted';
          const tally = sides[side];
          if (side === 'live') counts.add(order.phase, order.status);
          const createdDay = changeDay(order.created_at);
          tally.changed.add(changeDay(order.updated_at), createdDay);
          tally.created.add(createdDay, order.phase, order.status);
          for (const p of propertyPaths(properties)) {
            rows[side].push([order.id, p.path, p.value]);
            tally.paths.add(p.path, createdDay, order.phase, order.status);
          }
        },
        async insert(db) {
          for (const side of ['live', 'deleted'] as const) {
            await insertRows(db, SIDE_TABLES[side].rows, ['order_id', 'path', 'value'], rows[side], {
              business_id: businessId,
            });
          }
          await writeCounts(db, businessId, targets, heldKeys);
        },
      };
    },
    async finish(db) {
      await writeCounts(db, businessId, targets, 1);
    },
  };
}
