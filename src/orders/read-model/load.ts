import { insertRows } from '../../db/bulk.ts';
import type { Db } from '../../db/types.ts';
import { changeDay } from './change-counts.ts';
import type { ProjectedOrder } from './projections.ts';
import { SIDE_TABLES, type Side } from './properties.ts';
import { propertyPaths } from './property-values.ts';

/**
 * The derived tables of a new business's orders, made while a load writes the orders directly (the
 * demo generator), instead of reading them back: the same rows `rebuildOrderProjections` makes.
 */
export interface ProjectionLoad {
  batch(): ProjectionBatch;
  /** After the last batch, in the caller's transaction. */
  finish(db: Db): Promise<void>;
}

export interface ProjectionBatch {
  /** `properties`: the order's properties already parsed, when the caller has them. */
  add(order: ProjectedOrder, properties?: unknown): void;
  /** After the batch's orders, in the caller's transaction. */
  insert(db: Db): Promise<void>;
}

/** Counts by key, each key its parts joined in one string and nothing else kept: a large load has many keys. */
export class Tally {
  readonly #counts = new Map<string, number>();
  private readonly arity: number;
  constructor(arity: number) {
    this.arity = arity;
  }

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

  /** `size` rows at a time. The first part (a property path) may hold the separator, the others never. */
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

function sideTallies() {
  return { changed: new Tally(2), created: new Tally(3), paths: new Tally(4) };
}

type SideTallies = ReturnType<typeof sideTallies>;

/** Key columns besides business_id and shard. */
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

/** Orders are made in time order, so a day's keys mostly come together and are seldom written twice. */
const HELD_KEYS = 10_000;

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
