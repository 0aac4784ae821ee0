/* Timestamps are stored and returned as UTC ISO 8601 with milliseconds on both backends. A write's
   time comes from its WriteContext (src/write/runner.ts), which reads the injected clock. */

/** Normalises a database timestamp (pg: Date, SQLite: text) to ISO 8601 with ms. */
export function toIso(value: Date | string): string;
export function toIso(value: Date | string | null | undefined): string | null;
export function toIso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (CANONICAL_ISO.test(value)) return value;
    // PostgreSQL's JSON of a UTC timestamptz (the export): rewritten without a costly Date parse.
    const utc = PG_JSON_UTC.exec(value);
    if (utc) return `${utc[1]}.${(utc[2] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
  }
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** PostgreSQL's JSON of a UTC timestamptz: trailing fractional zeros dropped. */
const PG_JSON_UTC =
  /^(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:\.(\d{1,6}))?\+00:00$/;

const CANONICAL_ISO = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** The start of a YYYY-MM-DD day (years 0001-9999) in stored form, or null when no such day ('2026-02-30'). */
export function startOfDay(day: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || day < '0001') return null;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) === day ? iso : null;
}

/** An RFC 3339 input (format-checked by the schema) in stored form. */
export function parseDateTime(value: string): string {
  return new Date(value).toISOString();
}
