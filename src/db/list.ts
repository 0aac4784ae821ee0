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
  /** The last row of this page, or null when it ends the list. */
  next: Position | null;
}

/**
 * A row's place in list order: createdAt and id never change, so a cursor walk yields each row
 * that stays in the list exactly once. `createdAt` is null in lists ordered by id alone.
 */
export interface Position {
  createdAt: string | null;
  id: string;
}

export const positionOf = (row: { created_at: Date | string; id: string }): Position => ({
  createdAt: toIso(row.created_at),
  id: row.id,
});

/** Rows after `after` in `createdAt desc, id desc` order: an index range. */
export const beforeInListOrder = (after: Position, table?: string): Expression<SqlBool> => {
  const column = (name: string) => sql.ref(table ? `${table}.${name}` : name);
  return sql<SqlBool>`(${column('created_at')}, ${column('id')}) < (${after.createdAt}, ${after.id})`;
};

export const offsetOf = (page: number, limit: number) => (page - 1) * limit;

export const pastTheEnd = (total: number, paging: Paging) => offsetOf(paging.page, paging.limit) >= total;

export interface ListFilters {
  includeDeleted: boolean;
  createdSince?: string;
  status?: string;
  property: PropertyFilter | null;
}

export interface Paging {
  page: number;
  limit: number;
  /** A cursor's place: the page holds the rows after it. */
  after?: Position;
}

/** The next page's start, or null; a full last page of a cursor walk still gives one, and the empty next page ends it. */
export function nextOf(
  rows: Array<{ created_at: Date | string; id: string }>,
  paging: Paging,
  total: number,
): Position | null {
  if (rows.length < paging.limit) return null;
  if (!paging.after && offsetOf(paging.page, paging.limit) + rows.length >= total) return null;
  return positionOf(rows.at(-1)!);
}

/** Adds the shared filters to a single-table list query, by column name. */
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
 * One page of a filtered list in the standard envelope, in `createdAt desc, id desc` order, by
 * number or after a cursor. `toItems` loads the page's children in one query. `table` names the
 * ordering table when the query joins others. `total`: the query's count when the caller knows it
 * (a maintained count); otherwise the query is counted.
 */
export async function fetchPage<DB, TB extends keyof DB, Row extends { created_at: Date | string; id: string }, T>(
  query: SelectQueryBuilder<DB, TB, Row>,
  paging: Paging,
  toItems: (rows: Row[]) => Promise<T[]>,
  table?: string,
  counted?: number,
): Promise<Page<T>> {
  const column = (name: string) => sql.ref(table ? `${table}.${name}` : name);
  const total = counted ?? (await countOf(query));
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

/** A page past the middle is read backwards from the last row and reversed, since an offset is walked row by row. */
export function nearerEnd(total: number, paging: Paging): { backwards: boolean; skip: number; take: number } {
  return rangeFromNearerEnd(total, offsetOf(paging.page, paging.limit), paging.limit);
}

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

/** A page's ids, read from the nearer end; `total` must be the exact count of `query`. */
export async function selectPageIdsFromNearerEnd<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  paging: Paging,
  total: number,
): Promise<string[]> {
  const { backwards, skip, take } = nearerEnd(total, paging);
  return selectIdsFrom(query, backwards, skip, take);
}

export async function countOf<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<number> {
  // The generic row type hides the alias; the cast only names it.
  const counted = (await query.clearSelect().select(sql`count(*)`.as('total')).executeTakeFirstOrThrow()) as {
    total: number | string | bigint;
  };
  return Number(counted.total);
}
