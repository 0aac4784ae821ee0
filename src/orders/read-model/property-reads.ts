import { sql, type Expression, type SqlBool } from 'kysely';
import { comparableNumber, jsonPathStepsIntoArrays, numberAsCompared } from '../../db/dialect-json.ts';
import type { PropertyFilter } from '../../db/list.ts';
import type { Db } from '../../db/types.ts';
import { sumOfCounts } from './counts.ts';
import { SIDE_TABLES, type Side } from './properties.ts';
import { canonicalNumber, fittedValue } from './property-values.ts';

/** Reads of the side tables and path counts for order lists, with `includeDeleted` both sides. */

const sides = (includeDeleted: boolean): Side[] => (includeDeleted ? ['live', 'deleted'] : ['live']);

/** PostgreSQL's `#>` also steps into arrays (`tags.0`), which the side table does not index. */
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

/** An order's rows are on one side only, so a present path is in either table and an absent one in neither. */
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

/** Exact, without reading orders; one statement, so one snapshot. */
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
    // Orders less those with the path.
    let orders = sql<number | string>`(${sumOfCounts(db, 'order_counts', businessId, of)})`;
    if (of.includeDeleted) orders = sql`${orders} + (${sumOfCounts(db, 'order_deleted_counts', businessId, of)})`;
    total = sql`${orders} - (${total})`;
  }
  const row = await db.selectNoFrom(total.as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface PathTotal {
  phase: string;
  status: string;
  n: number;
}

/** Per phase and status, so one read gives both the candidates and a phase or status's total. */
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

export const sumPathTotals = (totals: PathTotal[], { phase, status }: PhaseStatus): number =>
  totals
    .filter((t) => (!phase || t.phase === phase) && (!status || t.status === status))
    .reduce((sum, t) => sum + t.n, 0);

/**
 * The candidates as a materialised CTE read as `orders`, each looked up by primary key. Materialised
 * so that SQLite, without statistics, cannot join each match through an index of the whole business.
 * Only CANDIDATE_COLUMNS are copied: whole rows make counting slower.
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

/** The columns of every filter but the property filter, and the page's sort and ids. */
const CANDIDATE_COLUMNS = ['id', 'business_id', 'created_at', 'updated_at', 'deleted_at', 'phase', 'status'] as const;
