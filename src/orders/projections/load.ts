import { insertRows } from '../../db/bulk.ts';
import type { Db } from '../../db/types.ts';
import { changeDay } from './change-counts.ts';
import type { ProjectedOrder } from './index.ts';
import { propertyPaths, SIDE_TABLES, type Side } from './properties.ts';

/**
 * The derived tables of a new business's orders, made while a load writes the orders directly
 * (the demo generator) instead of read back from them afterwards: the same rows
 * `rebuildOrderProjections` makes, from the same functions the upkeep uses (`propertyPaths`,
 * `changeDay`). Reading 1M orders back, parsing their properties and grouping them took a sixth
 * of a 1M-order load. The property rows go in with each batch of orders, the counts (a few
 * thousand rows) after the last one.
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

/** Counts by key, with the key's parts kept for the row. */
class Tally {
  readonly counts = new Map<string, { parts: unknown[]; n: number }>();
  add(...parts: unknown[]): void {
    const key = parts.join('\u0000');
    const entry = this.counts.get(key);
    if (entry) entry.n++;
    else this.counts.set(key, { parts, n: 1 });
  }
  rows(): unknown[][] {
    return [...this.counts.values()].map(({ parts, n }) => [...parts, n]);
  }
}

/** What each side (live or soft-deleted orders) counts, table by table, as the rebuild groups them. */
function sideTallies() {
  return { counts: new Tally(), changed: new Tally(), created: new Tally(), paths: new Tally() };
}

export function createProjectionLoad(businessId: string): ProjectionLoad {
  const sides = { live: sideTallies(), deleted: sideTallies() };
  return {
    batch() {
      const rows: Record<Side, unknown[][]> = { live: [], deleted: [] };
      return {
        add(order, properties = order.properties) {
          const side: Side = order.deleted_at === null ? 'live' : 'deleted';
          const tally = sides[side];
          tally.counts.add(order.phase, order.status);
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
            await insertRows(db, SIDE_TABLES[side].rows, ['order_id', 'path', 'value'], rows[side], { business_id: businessId });
          }
        },
      };
    },
    async finish(db) {
      const { live, deleted } = sides;
      const constants = { business_id: businessId, shard: 0 };
      await insertRows(db, 'order_counts', ['phase', 'status', 'n'], live.counts.rows(), constants);
      await insertRows(db, 'order_change_counts', ['day', 'created_day', 'n'], live.changed.rows(), constants);
      await insertRows(db, 'order_deleted_change_counts', ['day', 'created_day', 'n'], deleted.changed.rows(), constants);
      await insertRows(db, 'order_created_counts', ['day', 'phase', 'status', 'n'], live.created.rows(), constants);
      await insertRows(db, 'order_deleted_counts', ['day', 'phase', 'status', 'n'], deleted.created.rows(), constants);
      await insertRows(db, SIDE_TABLES.live.counts, ['path', 'day', 'phase', 'status', 'n'], live.paths.rows(), constants);
      await insertRows(db, SIDE_TABLES.deleted.counts, ['path', 'day', 'phase', 'status', 'n'], deleted.paths.rows(), constants);
    },
  };
}
