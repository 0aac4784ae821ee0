import { sql, type RawBuilder } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * Rows read as JSON the database builds, for reads of many rows (the export): one JSON text per
 * row and JSON.parse cost far less than the driver's per-value objects (docs/performance.md).
 * Numeric columns come as text (no lost digits), JSON columns as text on SQLite and parsed on
 * PostgreSQL, timestamps as ISO text.
 */
export interface JsonColumns<Row> {
  names: ReadonlyArray<keyof Row & string>;
  /** Sent as text on PostgreSQL. */
  numeric: ReadonlyArray<keyof Row & string>;
}

function values<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown>[] {
  const postgres = dialectOf(db) === 'postgres';
  return columns.names.map((name) => {
    const ref = sql.ref(table ? `${table}.${name}` : name);
    return postgres && columns.numeric.includes(name) ? sql`${ref}::text` : ref;
  });
}

/** The row's columns as one JSON array, in `columns.names` order. */
export function jsonRow<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown> {
  const list = sql.join(values(db, columns, table));
  return dialectOf(db) === 'postgres' ? sql`json_build_array(${list})` : sql`json_array(${list})`;
}

/** A group's rows as one JSON array of such arrays, unordered: with `group by`. */
export function jsonRows<Row>(db: Db, columns: JsonColumns<Row>, table?: string): RawBuilder<unknown> {
  const list = sql.join(values(db, columns, table));
  return dialectOf(db) === 'postgres'
    ? sql`json_agg(json_build_array(${list}))`
    : sql`json_group_array(json_array(${list}))`;
}

export const parseJsonValue = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

export function rowOf<Row>(columns: JsonColumns<Row>, values: unknown[]): Row {
  const row: Record<string, unknown> = {};
  const { names } = columns;
  for (let i = 0; i < names.length; i++) row[names[i]] = values[i];
  return row as Row;
}
