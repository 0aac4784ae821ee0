import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * Property filters on a JSON column, as each backend writes them: PostgreSQL's jsonb operators,
 * SQLite's JSON functions on text. Both answer alike wherever a path can be answered on both
 * (jsonPathStepsIntoArrays says where PostgreSQL reads further).
 */

/** A path segment we accept: plain identifiers only, so a path is never more than data. */
export const PROPERTY_SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/;
export const PROPERTY_PATH_MAX_SEGMENTS = 16;

function sqlitePath(segments: string[]): string {
  return `$${segments.map((s) => `."${s}"`).join('')}`;
}

/**
 * True when the key at the path is present in the JSON column, even when its value is null. On
 * PostgreSQL the test is wrapped in `coalesce(…, false)`, which never changes its value (IS NOT
 * NULL is never null) but makes the planner estimate it as a boolean it knows nothing of, half the
 * rows. Bare, and negated for an absent path, it is `… IS NULL`, which the planner's default puts at
 * almost no rows: a page walk for an absent path (a common case) then sorted a scan of the whole
 * table instead of walking the created index, far slower.
 */
export function jsonPathExists(db: Db, column: Expression<unknown>, segments: string[]): RawBuilder<SqlBool> {
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`coalesce((${column} #> ${segments}::text[]) is not null, false)`
    : sql<SqlBool>`json_type(${column}, ${sqlitePath(segments)}) is not null`;
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const ZERO = /^-?0(\.0+)?([eE][+-]?\d+)?$/;

/**
 * The text a property filter compares numerically, or null when it names no number a stored
 * property can hold. Stored numbers are doubles written by JSON.stringify: zero, or between about
 * 5e-324 and 1.8e308 in size. `1e-20000` is none of them (and is out of PostgreSQL numeric's
 * range), so it matches nothing rather than failing the query.
 */
export function comparableNumber(value: string): string | null {
  if (!JSON_NUMBER.test(value)) return null;
  const n = Number(value);
  if (!Number.isFinite(n)) return null;
  if (n === 0) return ZERO.test(value) ? '0' : null;
  return value;
}

/**
 * Whether a path can step into an array on this backend: PostgreSQL's `#>` takes an integer
 * segment (`tags.0`) as an array index; SQLite's `$."0"` paths never do.
 */
export function jsonPathStepsIntoArrays(db: Db, segments: string[]): boolean {
  return dialectOf(db) === 'postgres' && segments.some((s) => /^[+-]?\d+$/.test(s.trim()));
}

/**
 * The number (from comparableNumber) as this backend's JSON comparison sees it: PostgreSQL
 * compares numeric exactly; SQLite compares json_extract's value with the filter as a double, so
 * there the filter is rounded to a double first.
 */
export function numberAsCompared(db: Db, number: string): string {
  return dialectOf(db) === 'postgres' ? number : String(Number(number));
}

/**
 * True when the scalar at the path equals the value given as text: a string or boolean by its
 * text ("true"), a number by numeric value ("456", "456.0" and "4.56e2" all match 456; "456"
 * also matches the string "456"). Objects, arrays and null never match.
 */
export function jsonPathEquals(
  db: Db,
  column: Expression<unknown>,
  segments: string[],
  value: string,
): RawBuilder<SqlBool> {
  const number = comparableNumber(value);
  if (dialectOf(db) === 'postgres') {
    const at = sql`${column} #> ${segments}::text[]`;
    const numeric = number === null ? sql`false` : sql`(${at})::numeric = ${number}::numeric`;
    return sql<SqlBool>`(case jsonb_typeof(${at})
      when 'string' then ${column} #>> ${segments}::text[] = ${value}
      when 'boolean' then ${column} #>> ${segments}::text[] = ${value}
      when 'number' then ${numeric}
      else false end)`;
  }
  const path = sqlitePath(segments);
  const numeric = number === null ? sql`0` : sql`json_extract(${column}, ${path}) = ${Number(number)}`;
  return sql<SqlBool>`(case json_type(${column}, ${path})
    when 'text' then json_extract(${column}, ${path}) = ${value}
    when 'true' then ${value} = 'true'
    when 'false' then ${value} = 'false'
    when 'integer' then ${numeric}
    when 'real' then ${numeric}
    else 0 end)`;
}
