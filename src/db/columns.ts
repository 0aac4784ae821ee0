import type { ColumnType } from 'kysely';

/** Stored as timestamptz on PostgreSQL and ISO text on SQLite; always written as ISO text. */
export type Timestamp = ColumnType<Date | string, string, string>;
export type NullableTimestamp = ColumnType<Date | string | null, string | null | undefined, string | null>;
/** jsonb on PostgreSQL (arrives parsed), text on SQLite; always written as JSON text. */
export type Json = ColumnType<unknown, string | null | undefined, string | null>;
/** numeric on PostgreSQL, text on SQLite; both arrive as decimal text. */
export type Numeric = ColumnType<string, string, string>;
export type NullableNumeric = ColumnType<string | null, string | null | undefined, string | null>;
/** boolean on PostgreSQL, integer on SQLite; written as 0 or 1. */
export type Flag = ColumnType<boolean | number, number, number>;
