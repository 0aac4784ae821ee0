import { sql } from 'kysely';
import { countShard, statementsAreRoundTrips } from '../../db/dialect.ts';
import type { Db } from '../../db/types.ts';
import { statement } from '../../db/statement.ts';
import { sendWrite } from '../../db/pipeline.ts';
import { atCommit } from '../../write/at-commit.ts';

export interface CountChange {
  phase: string;
  status: string;
  delta: number;
}

/** In key order: see bumpCounts. */
export function netChanges<T extends { delta: number }>(changes: T[], keyOf: (change: T) => string): T[] {
  const net = new Map<string, T>();
  for (const c of changes) {
    const key = keyOf(c);
    net.set(key, { ...c, delta: (net.get(key)?.delta ?? 0) + c.delta });
  }
  return [...net.entries()]
    .filter(([, c]) => c.delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, c]) => c);
}

type CountTable =
  | 'order_counts'
  | 'order_change_counts'
  | 'order_created_counts'
  | 'order_deleted_counts'
  | 'order_property_counts'
  | 'order_deleted_property_counts'
  | 'order_deleted_change_counts'
  | 'shipment_counts'
  | 'shipment_change_counts';

/** One count table's changes; `keys`: its key columns besides business_id and shard. */
export interface CountBump {
  table: CountTable;
  keys: readonly string[];
  changes: Array<{ delta: number } & Record<string, unknown>>;
}

/** A `CountBump`, its keys checked against its changes. */
export const countBump = <C extends { delta: number }>(
  table: CountTable,
  keys: ReadonlyArray<keyof C & string>,
  changes: C[],
): CountBump => ({ table, keys, changes: changes as unknown as CountBump['changes'] });

/**
 * Each table's changes as one atomic multi-row upsert (`n = n + excluded.n`), so concurrent writers
 * never lose an increment, its rows netted per key and in key order, so that two transactions take
 * the row locks in the same order and cannot deadlock on PostgreSQL. On PostgreSQL the tables go in
 * one statement, each but the last a data-modifying `with` (decision 0069): the statements a write
 * sends are what it costs the server there. Every count write runs under its business's write lock
 * (src/write/clock.ts), so the order in which that statement's tables take their rows cannot meet
 * another's.
 */
export function bumpCounts(db: Db, businessId: string, bumps: CountBump[]): Promise<void> {
  // In a group of writes, once for the writes it keeps, before its COMMIT (decision 0070).
  return atCommit(db, businessId, writeCounts, bumps);
}

async function writeCounts(db: Db, businessId: string, bumps: CountBump[]): Promise<void> {
  const shard = countShard(db);
  // One upsert a table: the bumps of one table (several writes' in a group) are netted together.
  const byTable = new Map<CountTable, CountBump>();
  for (const { table, keys, changes } of bumps) {
    const same = byTable.get(table) ?? { table, keys, changes: [] };
    byTable.set(table, same);
    same.changes.push(...changes);
  }
  const tables = [...byTable.values()]
    .map(({ table, keys, changes }) => ({
      table,
      rows: netChanges(changes, (c) => keys.map((k) => String(c[k])).join('\u0000')).map((c) => ({
        business_id: businessId,
        ...Object.fromEntries(keys.map((k) => [k, c[k]])),
        shard,
        n: c.delta,
      })),
    }))
    .filter((t) => t.rows.length > 0);
  if (tables.length > 1 && statementsAreRoundTrips(db) && tables.every((t) => t.rows.length <= ROWS_PER_UPSERT)) {
    const values = Object.fromEntries(tables.map((t, i) => [`t${i}`, t.rows]));
    await sendWrite(db, countUpserts(db, values, tables.map((t) => t.table).join(',')));
    return;
  }
  for (const { table, rows } of tables)
    for (let i = 0; i < rows.length; i += ROWS_PER_UPSERT)
      await sendWrite(db, countUpsert(db, { rows: rows.slice(i, i + ROWS_PER_UPSERT) }, table));
}

/** Under both backends' bound-parameter limits, with the widest key (7 columns); nine tables in one statement too. */
const ROWS_PER_UPSERT = 1_000;

type Rows = Array<Record<string, unknown>>;

function upsertOf(db: Db, table: CountTable, rows: Rows) {
  const keys = Object.keys(rows[0]).filter((k) => k !== 'business_id' && k !== 'shard' && k !== 'n');
  // The table is one of nine of the same shape; the builder cannot type a column list chosen at run time.
  return db
    .insertInto(table)
    .values(rows as never)
    .onConflict((oc) =>
      oc
        .columns(['business_id', ...keys, 'shard'] as never)
        .doUpdateSet({ n: sql<number>`${sql.ref(`${table}.n`)} + excluded.n` } as never),
    );
}

/** Its text depends on the table and the number of rows. */
const countUpsert = statement((db, v: { rows: Rows }, table?: CountTable) => upsertOf(db, table!, v.rows));

/** Several tables' upserts in one statement (PostgreSQL): `tables` names them in order, `t0`, `t1`... their rows. */
const countUpserts = statement((db, v: Record<string, Rows>, tables?: string) => {
  const upserts = tables!.split(',').map((table, i) => upsertOf(db, table as CountTable, v[`t${i}`]));
  const last = upserts.pop()!;
  return sql`with ${sql.join(upserts.map((upsert, i) => sql`${sql.id(`c${i}`)} as (${upsert})`))} ${last}`;
});

export const orderCounts = (changes: CountChange[]) => countBump('order_counts', ['phase', 'status'], changes);

export function sumOfCounts(
  db: Db,
  table: 'order_counts' | 'order_deleted_counts',
  businessId: string,
  { phase, status }: { phase?: string; status?: string },
) {
  let query = db
    .selectFrom(table)
    .select(sql<number | string>`coalesce(sum(n), 0)`.as('n'))
    .where('business_id', '=', businessId);
  if (phase) query = query.where('phase', '=', phase);
  if (status) query = query.where('status', '=', status);
  return query;
}

/** One statement, so one snapshot. */
export async function countOrders(
  db: Db,
  businessId: string,
  of: { phase?: string; status?: string; includeDeleted?: boolean },
): Promise<number> {
  const live = sumOfCounts(db, 'order_counts', businessId, of);
  const row = of.includeDeleted
    ? await db
        .selectNoFrom((eb) => eb(live, '+', sumOfCounts(db, 'order_deleted_counts', businessId, of)).as('n'))
        .executeTakeFirstOrThrow()
    : await live.executeTakeFirstOrThrow();
  return Number(row.n);
}
