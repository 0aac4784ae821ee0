import { sql, type RawBuilder } from 'kysely';
import { notIndexed, utcDay } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import { toIso } from '../lib/time.ts';
import { bumpCounts, countBump } from '../orders/read-model/index.ts';

/**
 * The shipments' maintained counts (migration 0045), as the orders' (src/orders/read-model/README.md):
 * per status, and per UTC day of updatedAt, day of createdAt and status. Every write of a shipment
 * keeps them in its transaction (src/fulfilment/shipment-repository.ts), by atomic upserts on
 * sharded rows, so concurrent writers never lose a count; a list's total reads them.
 */

type Counted = { status: string; created_at: Date | string; updated_at: Date | string };

const dayOf = (time: Date | string) => toIso(time).slice(0, 10);
/** Timestamps are stored to the millisecond, so this is "before the next day". */
const endOfDay = (time: string) => `${time.slice(0, 10)}T23:59:59.999Z`;

/** Keeps the counts for a write that turns `before` (null: a new shipment) into `after`. */
export async function countShipmentChange(db: Db, businessId: string, before: Counted | null, after: Counted) {
  const changes: Array<[Counted, number]> = before
    ? [
        [before, -1],
        [after, 1],
      ]
    : [[after, 1]];
  await bumpCounts(db, businessId, [
    countBump(
      'shipment_counts',
      ['status'],
      changes.map(([row, delta]) => ({ status: row.status, delta })),
    ),
    countBump(
      'shipment_change_counts',
      ['day', 'created_day', 'status'],
      changes.map(([row, delta]) => ({
        day: dayOf(row.updated_at),
        created_day: dayOf(row.created_at),
        status: row.status,
        delta,
      })),
    ),
  ]);
}

export interface ShipmentCountFilters {
  status?: string;
  createdSince?: string;
  modifiedSince?: string;
}

/**
 * The exact number of the business's shipments that match, voided ones included as the list shows
 * them: the counts' whole days, plus by index the rows of the one day of each bound the counts cannot
 * split. So it reads a number of count rows that grows with the days of history, and at most a day's
 * rows, never the table. One statement, so one snapshot.
 */
export async function countShipments(db: Db, businessId: string, filters: ShipmentCountFilters): Promise<number> {
  const { status, createdSince: created } = filters;
  // Created after c means changed after c too (updatedAt >= createdAt): a later createdSince alone decides.
  const changed =
    created && filters.modifiedSince && created >= filters.modifiedSince ? undefined : filters.modifiedSince;
  const byStatus = status === undefined ? sql`` : sql`and status = ${status}`;
  const counted = (where: RawBuilder<unknown>) =>
    sql`(select coalesce(sum(n), 0) from shipment_change_counts where business_id = ${businessId} ${where} ${byStatus})`;
  const rows = (where: RawBuilder<unknown>) =>
    sql`(select count(*) from shipments where business_id = ${businessId} ${where} ${byStatus})`;
  const createdOnItsDay = (and: RawBuilder<unknown>) =>
    rows(sql`and created_at > ${created} and created_at <= ${endOfDay(created!)} ${and}`);
  const all = sql`(select coalesce(sum(n), 0) from shipment_counts where business_id = ${businessId} ${byStatus})`;
  let parts: RawBuilder<unknown>[];
  if (changed) {
    const since = changed.slice(0, 10);
    parts = created
      ? [
          counted(sql`and day > ${since} and created_day > ${created.slice(0, 10)}`),
          rows(
            sql`and updated_at > ${changed} and updated_at <= ${endOfDay(changed)} and ${notIndexed(db, 'created_at')} > ${created}`,
          ),
          createdOnItsDay(sql`and ${notIndexed(db, 'updated_at')} > ${endOfDay(changed)}`),
        ]
      : (await inOlderHalf(db, businessId, changed))
        ? // All of them less those last changed at or before it: the count rows of the days before it.
          [
            all,
            sql`- ${counted(sql`and day < ${since}`)}`,
            sql`- ${rows(sql`and updated_at >= ${`${since}T00:00:00.000Z`} and updated_at <= ${changed}`)}`,
          ]
        : [
            counted(sql`and day > ${since}`),
            rows(sql`and updated_at > ${changed} and updated_at <= ${endOfDay(changed)}`),
          ];
  } else if (created) parts = [counted(sql`and created_day > ${created.slice(0, 10)}`), createdOnItsDay(sql``)];
  else parts = [all];
  const {
    rows: [row],
  } = await sql<{ n: number | string }>`select ${sql.join(parts, sql` + `)} as n`.execute(db);
  return Number(row.n);
}

/**
 * Whether `since` lies in the older half of the business's shipments' history (from the first
 * created to the last changed): a changed-since total is then read from the days before it, fewer
 * than those after. A new mirror's first walk, from before the first shipment, reads no day at all.
 */
async function inOlderHalf(db: Db, businessId: string, since: string): Promise<boolean> {
  const ends = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('shipments')
        .select('created_at')
        .where('business_id', '=', businessId)
        .orderBy('created_at')
        .limit(1)
        .as('first'),
      eb
        .selectFrom('shipments')
        .select('updated_at')
        .where('business_id', '=', businessId)
        .orderBy('updated_at', 'desc')
        .limit(1)
        .as('last'),
    ])
    .executeTakeFirstOrThrow();
  if (ends.first === null || ends.last === null) return false;
  const [first, last] = [Date.parse(toIso(ends.first)), Date.parse(toIso(ends.last))];
  return Date.parse(since) < first + (last - first) / 2;
}

/** Builds the counts of a business from its shipments (the demo generator, after writing shipments directly). */
export async function rebuildShipmentCounts(db: Db, businessId: string): Promise<void> {
  await db.deleteFrom('shipment_counts').where('business_id', '=', businessId).execute();
  await db.deleteFrom('shipment_change_counts').where('business_id', '=', businessId).execute();
  await sql`insert into shipment_counts (business_id, status, shard, n)
    select business_id, status, 0, count(*) from shipments where business_id = ${businessId}
    group by business_id, status`.execute(db);
  await sql`insert into shipment_change_counts (business_id, day, created_day, status, shard, n)
    select business_id, ${utcDay(db, sql.ref('updated_at'))}, ${utcDay(db, sql.ref('created_at'))}, status, 0, count(*)
    from shipments where business_id = ${businessId} group by 1, 2, 3, 4`.execute(db);
}
