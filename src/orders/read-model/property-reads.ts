import { sql, type Expression, type SqlBool } from 'kysely';
import { comparableNumber, jsonPathStepsIntoArrays, numberAsCompared } from '../../db/dialect-json.ts';
import type { PropertyFilter } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { sumOfCounts } from './counts.ts';
import { SIDE_TABLES, type Side } from './properties.ts';
import { canonicalNumber, fittedValue } from './property-values.ts';

/**
 * Reads of the flattened property index (src/orders/read-model/properties.ts) for order lists:
 * live orders' rows and counts, and with `includeDeleted` the soft-deleted orders' as well.
 */

const sides = (includeDeleted: boolean): Side[] => (includeDeleted ? ['live', 'deleted'] : ['live']);

/**
 * Whether the side table answers this filter. On PostgreSQL `#>` also steps into arrays by
 * integer segments (`tags.0`), which the side table does not index; such paths keep the JSON
 * functions, so every answer stays what it was.
 */
export function sideTableServes(db: Db, filter: PropertyFilter): boolean {
  return !jsonPathStepsIntoArrays(db, filter.segments);
}

/** The encoded values a propertyValue matches, by the rules of each backend's JSON comparison. */
export function matchingValues(db: Db, value: string): string[] {
  const values = [fittedValue(`s:${value}`)];
  if (value === 'true' || value === 'false') values.push(`b:${value}`);
  const number = comparableNumber(value);
  if (number !== null) {
    const canonical = canonicalNumber(numberAsCompared(db, number));
    if (canonical) values.push(`n:${canonical}`);
  }
  return values;
}

/**
 * The WHERE condition on `orders` for a property filter, through the side table(s). An order's
 * rows are in one table only (live or deleted), so with includeDeleted a present path is in
 * either, and an absent one in neither.
 */
export function sideTableCondition(
  db: Db,
  businessId: string,
  filter: PropertyFilter,
  includeDeleted = false,
): Expression<SqlBool> {
  const path = filter.segments.join('.');
  const tables = sides(includeDeleted).map((side) => sql.table(SIDE_TABLES[side].rows));
  if (filter.value !== undefined) {
    const values = matchingValues(db, filter.value);
    return sql<SqlBool>`orders.id in (${sql.join(
      tables.map(
        (t) => sql`select order_id from ${t}
      where business_id = ${businessId} and path = ${path} and value in (${sql.join(values)})`,
      ),
      sql` union all `,
    )})`;
  }
  const present = sql.join(
    tables.map((t) => sql`exists (select 1 from ${t} p where p.order_id = orders.id and p.path = ${path})`),
    sql` or `,
  );
  return filter.exists === false ? sql<SqlBool>`not (${present})` : sql<SqlBool>`(${present})`;
}

export interface PhaseStatus {
  phase?: string;
  status?: string;
  includeDeleted?: boolean;
}

/** The number of orders that have the path, of a phase and/or status when given, from one side's maintained counts. */
function countWithPath(db: Db, side: Side, businessId: string, path: string, { phase, status }: PhaseStatus) {
  let query = db
    .selectFrom(SIDE_TABLES[side].counts)
    .select(sql<number | string | null>`coalesce(sum(n), 0)`.as('n'))
    .where('business_id', '=', businessId)
    .where('path', '=', path);
  if (phase) query = query.where('phase', '=', phase);
  if (status) query = query.where('status', '=', status);
  return query;
}

/**
 * The exact number of orders matching this property filter (live ones, or all with
 * `includeDeleted`; of a phase and/or status when given, for a path's presence or absence),
 * without reading orders: one statement, so one snapshot.
 */
export async function countByProperty(
  db: Db,
  businessId: string,
  filter: PropertyFilter,
  of: PhaseStatus = {},
): Promise<number> {
  const path = filter.segments.join('.');
  const onSides = sides(of.includeDeleted ?? false);
  const terms = onSides.map((side) => {
    if (filter.value === undefined) return countWithPath(db, side, businessId, path, of);
    return db
      .selectFrom(SIDE_TABLES[side].rows)
      .select(sql<number | string>`count(*)`.as('n'))
      .where('business_id', '=', businessId)
      .where('path', '=', path)
      .where('value', 'in', matchingValues(db, filter.value));
  });
  let total = sql<number | string>`(${terms[0]})`;
  for (const term of terms.slice(1)) total = sql`${total} + (${term})`;
  if (filter.value === undefined && filter.exists === false) {
    // Orders (src/orders/read-model/counts.ts) less those with the path, all maintained.
    let orders = sql<number | string>`(${sumOfCounts(db, 'order_counts', businessId, of)})`;
    if (of.includeDeleted) orders = sql`${orders} + (${sumOfCounts(db, 'order_deleted_counts', businessId, of)})`;
    total = sql`${orders} - (${total})`;
  }
  const row = await db.selectNoFrom(total.as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A path's orders of one phase and status (live ones, or with includeDeleted all), summed over their created days. */
export interface PathTotal {
  phase: string;
  status: string;
  n: number;
}

/**
 * How many orders have the path, per phase and status: one statement, which reads the path's
 * counts (a row per day, phase and status) once. A list by a present path needs their sum (how
 * many orders it could match) and often its phase and status's share (its total); it reads them
 * here together instead of by two sums (sumPathTotals).
 */
export async function pathTotals(
  db: Db,
  businessId: string,
  path: string,
  includeDeleted = false,
): Promise<PathTotal[]> {
  const [first, ...rest] = sides(includeDeleted).map((side) =>
    db
      .selectFrom(SIDE_TABLES[side].counts)
      .select(['phase', 'status', sql<number | string>`sum(n)`.as('n')])
      .where('business_id', '=', businessId)
      .where('path', '=', path)
      .groupBy(['phase', 'status']),
  );
  const rows = await rest.reduce((query, next) => query.unionAll(next), first).execute();
  return rows.map((r) => ({ phase: r.phase, status: r.status, n: Number(r.n) }));
}

/** The orders of `pathTotals` of a phase and/or status when given: what countByProperty counts for a present path. */
export const sumPathTotals = (totals: PathTotal[], { phase, status }: PhaseStatus): number =>
  totals
    .filter((t) => (!phase || t.phase === phase) && (!status || t.status === status))
    .reduce((sum, t) => sum + t.n, 0);

/**
 * The orders that match a value or have a path, driven from the side table(s) (their rows are
 * orders of the business only), each read by primary key, for the other filters and the sort to be
 * added: a materialised CTE named `candidates`, read as `orders`. Materialised, so that the planner
 * cannot see the other filters while it joins: SQLite, without statistics, then joined each match
 * to an index covering their columns (the whole business's entries per match) instead of looking
 * its key up. Only the columns the other filters and the page read (CANDIDATE_COLUMNS) are copied
 * in: whole rows, with their properties and addresses, made counting slower.
 */
export function ordersFromSideTable(db: Db, businessId: string, filter: PropertyFilter, includeDeleted = false) {
  const path = filter.segments.join('.');
  const matchesOn = (side: Side) => {
    let matches = db
      .selectFrom(SIDE_TABLES[side].rows)
      .select('order_id')
      .where('business_id', '=', businessId)
      .where('path', '=', path);
    if (filter.value !== undefined) matches = matches.where('value', 'in', matchingValues(db, filter.value));
    return matches;
  };
  const matches = includeDeleted ? matchesOn('live').unionAll(matchesOn('deleted')) : matchesOn('live');
  return db
    .with(
      (cte) => cte('candidates').materialized(),
      (qb) =>
        qb
          .selectFrom(matches.as('p'))
          .crossJoin('orders')
          .whereRef('orders.id', '=', 'p.order_id')
          .select(CANDIDATE_COLUMNS.map((c) => `orders.${c}` as const)),
    )
    .selectFrom('candidates as orders');
}

/**
 * What a list from the side table reads of its candidates: the columns of every filter but the
 * property filter itself (src/orders/read-model/plan.ts ORDER_FILTERS), and the page's sort and ids.
 */
const CANDIDATE_COLUMNS = ['id', 'business_id', 'created_at', 'updated_at', 'deleted_at', 'phase', 'status'] as const;
