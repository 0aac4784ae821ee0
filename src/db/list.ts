import { sql, type Expression, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { jsonPathEquals, jsonPathExists } from './dialect-json.ts';
import type { Db } from './types.ts';
import { whereLive } from './live.ts';
import { toIso } from '../lib/time.ts';

export interface PropertyFilter {
  segments: string[];
  value?: string;
  exists?: boolean;
}

/** The WHERE condition for a property filter on a JSON column, on either backend. */
export function propertyCondition(db: Db, column: Expression<unknown>, filter: PropertyFilter): Expression<SqlBool> {
  if (filter.value !== undefined) return jsonPathEquals(db, column, filter.segments, filter.value);
  const present = jsonPathExists(db, column, filter.segments);
  return filter.exists === false ? sql<SqlBool>`not (${present})` : present;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
  /** Where the next page starts (the last row of this one), or null when this page ends the list. */
  next: Position | null;
}

/**
 * A row's place in a list's order: its createdAt and id, which never change, so a walk from a
 * place (a cursor, src/http/cursor.ts) yields every row that stays in the list exactly once, however
 * rows are created, changed or deleted around it. `createdAt` is null in lists ordered by id alone.
 */
export interface Position {
  createdAt: string | null;
  id: string;
}

export const positionOf = (row: { created_at: Date | string; id: string }): Position => ({
  createdAt: toIso(row.created_at),
  id: row.id,
});

/** The rows after `after` in the list order `createdAt desc, id desc`: a range of the index in that order. */
export const beforeInListOrder = (after: Position, table?: string): Expression<SqlBool> => {
  const column = (name: string) => sql.ref(table ? `${table}.${name}` : name);
  return sql<SqlBool>`(${column('created_at')}, ${column('id')}) < (${after.createdAt}, ${after.id})`;
};

export const offsetOf = (page: number, limit: number) => (page - 1) * limit;

/** Whether a page starts at or after the last row: its answer is empty, known from the (exact) total without reading rows. */
export const pastTheEnd = (total: number, paging: Paging) => offsetOf(paging.page, paging.limit) >= total;

/** The filters every resource list shares: soft-deleted rows, a strict `createdSince`, status, one property filter. */
export interface ListFilters {
  includeDeleted: boolean;
  createdSince?: string;
  status?: string;
  property: PropertyFilter | null;
}

export interface Paging {
  page: number;
  limit: number;
  /** A cursor's place: the page holds the rows after it, and `page` is the cursor's page number. */
  after?: Position;
}

/**
 * Where the page after this one starts: its last row, when the page is full and (for a page by
 * number) does not reach the total. A full last page of a cursor walk still gives one: the next,
 * empty page ends the walk.
 */
export function nextOf(
  rows: Array<{ created_at: Date | string; id: string }>,
  paging: Paging,
  total: number,
): Position | null {
  if (rows.length < paging.limit) return null;
  if (!paging.after && offsetOf(paging.page, paging.limit) + rows.length >= total) return null;
  return positionOf(rows.at(-1)!);
}

/**
 * Adds the shared filters to a single-table list query. Columns are named with `sql.ref`, so any
 * table with `deleted_at`, `created_at`, `status` and `properties` columns can use it.
 */
export function applyListFilters<DB, TB extends keyof DB, O>(
  db: Db,
  query: SelectQueryBuilder<DB, TB, O>,
  filters: ListFilters,
): SelectQueryBuilder<DB, TB, O> {
  let q = query;
  if (!filters.includeDeleted) q = q.where(whereLive());
  if (filters.createdSince) q = q.where(sql<SqlBool>`${sql.ref('created_at')} > ${filters.createdSince}`);
  if (filters.status) q = q.where(sql<SqlBool>`${sql.ref('status')} = ${filters.status}`);
  if (filters.property) q = q.where(propertyCondition(db, sql.ref('properties'), filters.property));
  return q;
}

/**
 * One page of a filtered list in the standard envelope: the count, the page in `createdAt desc,
 * id desc` order (stable across pages), by number or after a cursor's place, then `toItems`, which
 * loads the page's children in one query and maps the rows. Three queries whatever the page size.
 * `table` names the table whose createdAt and id order the list, when the query joins others. (The
 * order list plans its own count and page: src/orders/read-model/plan.ts.)
 */
export async function fetchPage<DB, TB extends keyof DB, Row extends { created_at: Date | string; id: string }, T>(
  query: SelectQueryBuilder<DB, TB, Row>,
  paging: Paging,
  toItems: (rows: Row[]) => Promise<T[]>,
  table?: string,
): Promise<Page<T>> {
  const column = (name: string) => sql.ref(table ? `${table}.${name}` : name);
  const total = await countOf(query);
  const empty = { items: [], total, page: paging.page, pageSize: paging.limit, next: null };
  if (!paging.after && pastTheEnd(total, paging)) return empty;
  const rows = await (paging.after
    ? query.where(beforeInListOrder(paging.after, table))
    : query.offset(offsetOf(paging.page, paging.limit))
  )
    .orderBy(column('created_at'), 'desc')
    .orderBy(column('id'), 'desc')
    .limit(paging.limit)
    .execute();
  return {
    items: await toItems(rows),
    total,
    page: paging.page,
    pageSize: paging.limit,
    next: nextOf(rows, paging, total),
  };
}

/** The ids of `limit` rows from `offset` in the list order (`createdAt desc, id desc`), which an index can answer without reading rows. */
export async function selectPageIds<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  limit: number,
  offset: number,
): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = (await query
    .clearSelect()
    .select(sql<string>`${sql.ref('id')}`.as('id'))
    .orderBy(sql.ref('created_at'), 'desc')
    .orderBy(sql.ref('id'), 'desc')
    .limit(limit)
    .offset(offset)
    .execute()) as unknown as Array<{ id: string }>;
  return rows.map((r) => r.id);
}

/**
 * Where a page of `total` rows is read from: a page past the middle is read backwards
 * (`createdAt asc, id asc`) from the last row and reversed, since an offset is walked row by row.
 * `skip` rows are passed over from that end, and `take` read.
 */
export function nearerEnd(total: number, paging: Paging): { backwards: boolean; skip: number; take: number } {
  return rangeFromNearerEnd(total, offsetOf(paging.page, paging.limit), paging.limit);
}

/** The same for `limit` rows from `offset` (the rows of a list that a page covers). */
export function rangeFromNearerEnd(
  total: number,
  offset: number,
  limit: number,
): { backwards: boolean; skip: number; take: number } {
  const after = total - offset - limit;
  return offset <= after
    ? { backwards: false, skip: offset, take: limit }
    : { backwards: true, skip: Math.max(0, after), take: Math.max(0, Math.min(limit, total - offset)) };
}

/** `take` ids after `skip` in list order, or backwards from the end (then reversed into list order). */
export async function selectIdsFrom<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  backwards: boolean,
  skip: number,
  take: number,
): Promise<string[]> {
  if (take <= 0) return [];
  const direction = backwards ? 'asc' : 'desc';
  const rows = (await query
    .clearSelect()
    .select(sql<string>`${sql.ref('id')}`.as('id'))
    .orderBy(sql.ref('created_at'), direction)
    .orderBy(sql.ref('id'), direction)
    .limit(take)
    .offset(skip)
    .execute()) as unknown as Array<{ id: string }>;
  const ids = rows.map((r) => r.id);
  return backwards ? ids.reverse() : ids;
}

/**
 * The ids of a page of `total` rows, read from the nearer end: the last pages cost what the first
 * do, and no page walks more than half the list (from the start, a deep page walked nearly all of
 * it). `total` must be the exact count of `query`.
 */
export async function selectPageIdsFromNearerEnd<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: Paging,
  total: number,
): Promise<string[]> {
  const { backwards, skip, take } = nearerEnd(total, paging);
  return selectIdsFrom(query, backwards, skip, take);
}

/** `count(*)` of the rows a list query selects. */
export async function countOf<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<number> {
  // The row type is generic here, so TypeScript cannot see the alias; the cast only names it.
  const counted = (await query.clearSelect().select(sql`count(*)`.as('total')).executeTakeFirstOrThrow()) as {
    total: number | string | bigint;
  };
  return Number(counted.total);
}
