import { sql } from 'kysely';
import { utcDay } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import type { OrderRow } from '../mapper.ts';
import { bumpCounts, type CountChange, orderCounts } from './counts.ts';
import { changeCounts, changeDay, type ChangeCountChange, deletedChangeCounts } from './change-counts.ts';
import { createdCounts, type CreatedCountChange, deletedCounts } from './created-counts.ts';
import { applyPropertyChanges, rebuildSideTable } from './properties.ts';
import { whereLive } from '../../db/live.ts';

/** The derived order tables' one owner (README.md lists them); nothing else writes them. */
export type ProjectedOrder = Pick<
  OrderRow,
  'id' | 'business_id' | 'phase' | 'status' | 'created_at' | 'updated_at' | 'properties' | 'deleted_at'
>;

const isLive = (order: ProjectedOrder | null): order is ProjectedOrder => order !== null && order.deleted_at === null;
const isDeleted = (order: ProjectedOrder | null): order is ProjectedOrder =>
  order !== null && order.deleted_at !== null;

/**
 * In the caller's transaction. The caller holds the order's row lock and read `before` after taking
 * it, so what is taken off the tables is what was put there.
 */
export async function applyOrderChange(
  db: Db,
  before: ProjectedOrder | null,
  after: ProjectedOrder | null,
): Promise<void> {
  await applyOrderChanges(db, [{ before, after }]);
}

/**
 * `applyOrderChange` of several orders of one business at once: each derived table written by one
 * statement for all of them (the counts netted per key), as bulk import's runs of order creates need.
 */
export async function applyOrderChanges(
  db: Db,
  changes: Array<{ before: ProjectedOrder | null; after: ProjectedOrder | null }>,
): Promise<void> {
  const order = changes.map((c) => c.after ?? c.before).find((o) => o !== null);
  if (!order) return;
  const businessId = order.business_id;
  const counts: CountChange[] = [];
  const days: ChangeCountChange[] = [];
  const created: CreatedCountChange[] = [];
  const deleted: CreatedCountChange[] = [];
  const deletedDays: ChangeCountChange[] = [];
  const dayRows = (o: ProjectedOrder, delta: number) => {
    const day = changeDay(o.created_at);
    return {
      created: { day, phase: o.phase, status: o.status, delta },
      changed: { day: changeDay(o.updated_at), created_day: day, delta },
    };
  };
  for (const { before, after } of changes) {
    for (const [o, delta] of [
      [before, -1],
      [after, 1],
    ] as const) {
      if (!o) continue;
      const rows = dayRows(o, delta);
      if (isLive(o)) {
        counts.push({ phase: o.phase, status: o.status, delta });
        days.push(rows.changed);
        created.push(rows.created);
      } else {
        deleted.push(rows.created);
        deletedDays.push(rows.changed);
      }
    }
  }
  // An order's paths are on the live side or the deleted one; a soft delete moves them across.
  const sides = (side: (o: ProjectedOrder | null) => o is ProjectedOrder) =>
    changes.map(({ before, after }) => ({ before: side(before) ? before : null, after: side(after) ? after : null }));
  const livePaths = await applyPropertyChanges(db, 'live', businessId, sides(isLive));
  const deletedPaths = await applyPropertyChanges(db, 'deleted', businessId, sides(isDeleted));
  // Changes that cancel out (same phase and status, same day) write nothing.
  await bumpCounts(db, businessId, [
    orderCounts(counts),
    changeCounts(days),
    createdCounts(created),
    deletedCounts(deleted),
    deletedChangeCounts(deletedDays),
    livePaths,
    deletedPaths,
  ]);
}

/** In the caller's transaction. */
export async function rebuildOrderProjections(
  db: Db,
  businessId: string,
  onProgress?: (ordersIndexed: number) => void,
): Promise<void> {
  const tables = [
    'order_counts',
    'order_change_counts',
    'order_created_counts',
    'order_deleted_counts',
    'order_deleted_change_counts',
    'order_property_counts',
    'order_properties',
    'order_deleted_property_counts',
    'order_deleted_properties',
  ] as const;
  for (const table of tables) {
    await db.deleteFrom(table).where('business_id', '=', businessId).execute();
  }
  await sql`insert into order_counts (business_id, phase, status, shard, n)
    select business_id, phase, status, 0, count(*) from orders where business_id = ${businessId} and ${whereLive()}
    group by business_id, phase, status`.execute(db);
  const day = utcDay(db, sql.ref('updated_at'));
  const createdDay = utcDay(db, sql.ref('created_at'));
  await sql`insert into order_change_counts (business_id, day, created_day, shard, n)
    select business_id, ${day}, ${createdDay}, 0, count(*) from orders where business_id = ${businessId} and ${whereLive()}
    group by business_id, ${day}, ${createdDay}`.execute(db);
  await sql`insert into order_deleted_change_counts (business_id, day, created_day, shard, n)
    select business_id, ${day}, ${createdDay}, 0, count(*) from orders where business_id = ${businessId} and deleted_at is not null
    group by business_id, ${day}, ${createdDay}`.execute(db);
  await sql`insert into order_created_counts (business_id, day, phase, status, shard, n)
    select business_id, ${createdDay}, phase, status, 0, count(*) from orders where business_id = ${businessId} and ${whereLive()}
    group by business_id, ${createdDay}, phase, status`.execute(db);
  await sql`insert into order_deleted_counts (business_id, day, phase, status, shard, n)
    select business_id, ${createdDay}, phase, status, 0, count(*) from orders where business_id = ${businessId} and deleted_at is not null
    group by business_id, ${createdDay}, phase, status`.execute(db);

  await rebuildSideTable(db, 'live', businessId, onProgress);
  await rebuildSideTable(db, 'deleted', businessId);
}
