/* Timestamps are stored and returned as UTC ISO 8601 with milliseconds on both backends. A write's
   time comes from its WriteContext (src/write/runner.ts), which reads the injected clock. */

/** Normalises a database timestamp (pg gives Date, SQLite gives text) to ISO 8601 with ms. */
export function toIso(value: Date | string): string;
export function toIso(value: Date | string | null | undefined): string | null;
export function toIso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  // SQLite returns the stored text, which is already in this form; skip the Date round trip.
  if (typeof value === 'string') {
    if (CANONICAL_ISO.test(value)) return value;
    // PostgreSQL's JSON of a timestamptz in UTC (the export's rows): the same instant, rewritten
    // without a Date, whose parse of such text was a large share of a PostgreSQL export's time.
    const utc = PG_JSON_UTC.exec(value);
    if (utc) return `${utc[1]}.${(utc[2] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
  }
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** How PostgreSQL writes a timestamptz into JSON when the session's TimeZone is UTC: trailing zeros of the fraction dropped. */
const PG_JSON_UTC =
  /^(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:\.(\d{1,6}))?\+00:00$/;

/** What `Date.prototype.toISOString` gives for years 0000 to 9999. */
const CANONICAL_ISO = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/**
 * The start of a calendar day given as YYYY-MM-DD (years 0001-9999), in the stored form, or null
 * when the text names no such day ('2026-02-30', '2026-13-45'): the day must come back unchanged.
 */
export function startOfDay(day: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || day < '0001') return null;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) === day ? iso : null;
}

/** Parses an RFC 3339 input (already format-checked by the schema) to the stored form. */
export function parseDateTime(value: string): string {
  return new Date(value).toISOString();
}
