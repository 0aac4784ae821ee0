import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/** Property filters on a JSON column: PostgreSQL's jsonb operators, SQLite's JSON functions on text. */

/** Plain identifiers only, so a path is never more than data. */
export const PROPERTY_SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/;
export const PROPERTY_PATH_MAX_SEGMENTS = 16;

function sqlitePath(segments: string[]): string {
  return `$${segments.map((s) => `."${s}"`).join('')}`;
}

/**
 * Whether the key at the path is present, even with a null value. On PostgreSQL `coalesce(…, false)`
 * keeps the value but makes the planner estimate half the rows instead of almost none, which for an
 * absent path chose a full scan and sort over walking the created index.
 */
export function jsonPathExists(db: Db, column: Expression<unknown>, segments: string[]): RawBuilder<SqlBool> {
  return dialectOf(db) === 'postgres'
    ? sql<SqlBool>`coalesce((${column} #> ${segments}::text[]) is not null, false)`
    : sql<SqlBool>`json_type(${column}, ${sqlitePath(segments)}) is not null`;
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const ZERO = /^-?0(\.0+)?([eE][+-]?\d+)?$/;

/**
 * The text a filter compares numerically, or null when no stored double (JSON.stringify output)
 * can equal it; `1e-20000` matches nothing rather than failing PostgreSQL's numeric.
 */
export function comparableNumber(value: string): string | null {
  if (!JSON_NUMBER.test(value)) return null;
  const n = Number(value);
  if (!Number.isFinite(n)) return null;
  if (n === 0) return ZERO.test(value) ? '0' : null;
  return value;
}

/** PostgreSQL's `#>` takes an integer segment as an array index; SQLite's `$."0"` never does. */
export function jsonPathStepsIntoArrays(db: Db, segments: string[]): boolean {
  return dialectOf(db) === 'postgres' && segments.some((s) => /^[+-]?\d+$/.test(s.trim()));
}

/** SQLite compares json_extract's value as a double, so the filter is rounded to one there. */
export function numberAsCompared(db: Db, number: string): string {
  return dialectOf(db) === 'postgres' ? number : String(Number(number));
}

/**
 * The scalar at the path equals the text: strings and booleans by text, numbers by numeric value
 * ("456", "4.56e2" match 456; "456" also matches the string). Objects, arrays and null never match.
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

/**
 * The objects of a JSON array column as rows of a FROM item `alias` (to join after the table), and
 * how to read one of their fields as text or as a number: `cross join ${from}` then `${field('key')}`.
 */
export function jsonArrayRows(db: Db, column: string, alias: string) {
  const value = sql.ref(`${alias}.value`);
  if (dialectOf(db) === 'postgres')
    return {
      from: sql`jsonb_array_elements(${sql.ref(column)}) as ${sql.id(alias)}(value)`,
      text: (key: string) => sql<string>`${value}->>${key}`,
      number: (key: string) => sql<string>`(${value}->>${key})::numeric`,
    };
  const field = (key: string) => sql<string>`json_extract(${value}, ${`$.${key}`})`;
  return { from: sql`json_each(${sql.ref(column)}) as ${sql.id(alias)}`, text: field, number: field };
}

/**
 * An exact sum of JSON numbers of at most `places` decimal places (`sum`, an aggregate of `number`),
 * and that sum as decimal text (`text`, of the column it was given as). PostgreSQL sums numerics;
 * SQLite, whose JSON numbers are doubles, sums whole units of 10^-places and writes them back as a
 * decimal (0.1 + 0.7 is 0.8, not 0.7999999999999999).
 */
export function exactDecimalSum(db: Db, number: RawBuilder<string>, places: number) {
  if (dialectOf(db) === 'postgres')
    return { sum: sql`sum(${number})`, text: (column: RawBuilder<unknown>) => sql`${column}` };
  // Literals: a bound JavaScript number is a REAL to SQLite, and its division would not be whole.
  const unit = sql.lit(10 ** places);
  return {
    sum: sql`sum(cast(round(${number} * ${unit}) as integer))`,
    text: (column: RawBuilder<unknown>) => sql`case when ${column} % ${unit} = 0 then cast(${column} / ${unit} as text)
      else rtrim(printf(${sql.lit(`%d.%0${places}d`)}, ${column} / ${unit}, ${column} % ${unit}), '0') end`,
  };
}
