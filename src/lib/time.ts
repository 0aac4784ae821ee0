/* Timestamps are stored and returned as UTC ISO 8601 with milliseconds on both backends. A write's
   time comes from its WriteContext (src/write/runner.ts), which reads the injected clock. */

/** Normalises a database timestamp (pg gives Date, SQLite gives text) to ISO 8601 with ms. */
export function toIso(value: Date | string): string;
export function toIso(value: Date | string | null | undefined): string | null;
export function toIso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  // SQLite returns the stored text, which is already in this form; skip the Date round trip.
  if (typeof value === 'string' && CANONICAL_ISO.test(value)) return value;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** What `Date.prototype.toISOString` gives for years 0000 to 9999. */
const CANONICAL_ISO = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** Parses an RFC 3339 input (already format-checked by the schema) to the stored form. */
export function parseDateTime(value: string): string {
  return new Date(value).toISOString();
}

/** A new `updatedAt`: now, but always after the previous one, so `updatedSince` polls never miss a write. */
export function laterThan(now: string, previous: Date | string): string {
  return new Date(Math.max(Date.parse(now), new Date(toIso(previous)).getTime() + 1)).toISOString();
}
