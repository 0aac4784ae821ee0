import { sql, type RawBuilder } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * Rows read as JSON made by the database, for reads of many rows (the export): better-sqlite3 makes
 * a JS string and an object property for every value, far more work than SQLite's own; one JSON
 * text per row (or group of rows) and JSON.parse cost much less (docs/performance.md). The rows
 * come back as the driver gives them column by column: numeric columns as text (a JSON number would
 * lose digits on PostgreSQL; SQLite stores them as text), JSON columns as their text on SQLite and
 * parsed on PostgreSQL, timestamps as ISO text (`toIso` reads either form).
 */
export interface JsonColumns<Row> {
  names: ReadonlyArray<keyof Row & string>;
  /** The numeric columns among them: sent as text on PostgreSQL. */
  numeric: ReadonlyArray<keyof Row & string>;
}

function values<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown>[] {
  const postgres = dialectOf(db) === 'postgres';
  return columns.names.map((name) => {
    const ref = sql.ref(table ? `${table}.${name}` : name);
    return postgres && columns.numeric.includes(name) ? sql`${ref}::text` : ref;
  });
}

/** The row's columns as one JSON array, in the order of `columns.names`. */
export function jsonRow<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown> {
  const list = sql.join(values(db, columns, table));
  return dialectOf(db) === 'postgres' ? sql`json_build_array(${list})` : sql`json_array(${list})`;
}

/** The rows of a group as one JSON array of such arrays (in no particular order): with `group by`. */
export function jsonRows<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown> {
  const list = sql.join(values(db, columns, table));
  return dialectOf(db) === 'postgres'
    ? sql`json_agg(json_build_array(${list}))`
    : sql`json_group_array(json_array(${list}))`;
}

/** What `jsonRow` or `jsonRows` returned (text on SQLite, parsed on PostgreSQL), parsed. */
export const parseJsonValue = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

/** One row of `jsonRow`/`jsonRows` as an object with the columns' names. */
export function rowOf<Row>(columns: JsonColumns<Row>, values: unknown[]): Row {
  const row: Record<string, unknown> = {};
  const { names } = columns;
  for (let i = 0; i < names.length; i++) row[names[i]] = values[i];
  return row as Row;
}
