import pg from 'pg';

/** PostgreSQL's type OID of `timestamptz`, the type of every timestamp column (src/db/dialect.ts). */
const TIMESTAMPTZ = 1184;

/** A `timestamptz` in PostgreSQL's text form at UTC (DateStyle ISO): `2026-12-03 10:24:15.959+00`. */
const UTC_TEXT = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;

const parseTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date | number;

/**
 * A `timestamptz` as the ISO 8601 text SQLite stores (`2026-12-03T10:24:15.959Z`), so rows read the
 * same on both backends. A server at UTC is rewritten without a Date; any other zone goes through
 * node-postgres's own parser (microseconds are cut to milliseconds, as a Date cuts them).
 */
export function timestamptzAsIso(text: string): string {
  const utc = UTC_TEXT.exec(text);
  if (utc) return `${utc[1]}T${utc[2]}.${(utc[3] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
  const parsed = parseTimestamptz(text);
  return parsed instanceof Date && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : text;
}

/**
 * The type parsers of every pool of the service (`types` of pg.Pool): node-postgres's, but for
 * `timestamptz`, which stays text (decision 0053: a Date per timestamp, made and then formatted back
 * for every row, cost 3 % of a PATCH's CPU).
 */
export const serviceTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ && (format ?? 'text') === 'text') return timestamptzAsIso;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;
