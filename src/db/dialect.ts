import { PostgresAdapter, sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Db, Dialect } from './types.ts';

/** The one place that asks which backend a query runs on. */
export function dialectOf(db: Db): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** A path segment we accept: plain identifiers only, so a path is never more than data. */
export const PROPERTY_SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/;
export const PROPERTY_PATH_MAX_SEGMENTS = 16;

function sqlitePath(segments: string[]): string {
  return '$' + segments.map((s) => `."${s}"`).join('');
}

/** True when the key at the path is present in the JSON column, even when its value is null. */
export function jsonPathExists(db: Db, column: Expression<unknown>, segments: string[]): RawBuilder<SqlBool> {
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`(${column} #> ${segments}::text[]) is not null`
    : sql<SqlBool>`json_type(${column}, ${sqlitePath(segments)}) is not null`;
}

/**
 * True when the scalar at the path, as JSON scalar text, equals the value:
 * "456" matches both 456 and "456"; true matches "true". Objects, arrays and null never match.
 */
export function jsonPathEquals(db: Db, column: Expression<unknown>, segments: string[], value: string): RawBuilder<SqlBool> {
  if (dialectOf(db) === 'postgres') {
    return sql<SqlBool>`(jsonb_typeof(${column} #> ${segments}::text[]) in ('string', 'number', 'boolean') and ${column} #>> ${segments}::text[] = ${value})`;
  }
  const path = sqlitePath(segments);
  return sql<SqlBool>`(case json_type(${column}, ${path})
    when 'true' then 'true' when 'false' then 'false'
    when 'text' then json_extract(${column}, ${path})
    when 'integer' then cast(json_extract(${column}, ${path}) as text)
    when 'real' then cast(json_extract(${column}, ${path}) as text)
    end) = ${value}`;
}

/** Whether an error is a unique-constraint violation, on either backend. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Column types that differ between the backends, for migrations. */
export function columnTypes(dialect: Dialect) {
  const pg = dialect === 'postgres';
  return {
    json: pg ? 'jsonb' : 'text',
    numeric: pg ? 'numeric' : 'text',
    timestamp: pg ? 'timestamptz' : 'text',
    flag: pg ? 'boolean' : 'integer',
  } as const;
}
