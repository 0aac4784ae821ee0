import { sql, type Expression, type SqlBool } from 'kysely';
import { jsonPathEquals, jsonPathExists } from './dialect.ts';
import type { Db } from './types.ts';

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
}

export const offsetOf = (page: number, limit: number) => (page - 1) * limit;
