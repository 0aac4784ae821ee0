import { dialectOf } from './dialect.ts';
import type { Db } from './types.ts';

/**
 * What the database answers for values a write stores, without reading them back: a write whose
 * statements go with its commit (src/db/deferred.ts) answers with these.
 *
 * Text, timestamps as ISO text (`toIso` reads either form) and numbers as plain decimal text (as
 * `toDecimalString` writes them: no exponent, no leading zeros, which PostgreSQL's numeric gives
 * back unchanged) come back as written. A JSON column is the exception on PostgreSQL: jsonb keeps an
 * object's keys by their length in UTF-8 bytes and then by those bytes, not as sent, and
 * node-postgres parses what it gives back. Its on-disk format depends on that order, so it does not
 * change between versions. SQLite gives the text back as written.
 */

const byJsonbOrder = (a: string, b: string) => {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length - y.length || Buffer.compare(x, y);
};

/** `value` with every object's keys in jsonb's order: as JSON.parse makes it of PostgreSQL's text. */
function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(record).sort(byJsonbOrder)) {
    // defineProperty, as JSON.parse does: a key named __proto__ stays data.
    Object.defineProperty(out, key, { value: inJsonbOrder(record[key]), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A JSON column's value as the database answers it, from the text written to it. */
export function storedJson(db: Db, text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null;
  return dialectOf(db) === 'postgres' ? inJsonbOrder(JSON.parse(text)) : text;
}

/**
 * `row` with `set` written over it, as the database would answer it (`returning *`): the JSON
 * columns named as `storedJson` gives them. The caller holds the row's lock, so nothing else
 * changed it in between.
 */
export function storedRow<Row extends object>(db: Db, row: Row, set: Partial<Record<keyof Row, unknown>>, json: ReadonlyArray<keyof Row>): Row {
  const out = { ...row, ...set } as Row;
  for (const column of json) {
    if (column in set) (out as Record<keyof Row, unknown>)[column] = storedJson(db, set[column] as string | null);
  }
  return out;
}
