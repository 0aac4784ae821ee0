import { createHash } from 'node:crypto';
import { PROPERTY_PATH_MAX_SEGMENTS, PROPERTY_SEGMENT } from '../../db/dialect-json.ts';
import { readJson } from '../../lib/json.ts';

/**
 * The paths and values of an order's properties, as the side tables (properties.ts) hold them.
 *
 * `value` encodes the scalar with its JSON type, so that matching keeps the JSON-function rules
 * (src/db/dialect-json.ts jsonPathEquals): `s:<text>` for strings, `b:true`/`b:false`, `n:<canonical>`
 * for numbers (an exact decimal form: 456, 456.0 and 4.56e2 are all `n:456e0`), and NULL for null,
 * objects and arrays, which are present but never match a value. A long string is stored as its
 * hash (fittedValue).
 */

const ANY_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Exact canonical text of a decimal number: sign, significant digits without trailing zeros, exponent. */
export function canonicalNumber(text: string): string | null {
  const m = ANY_NUMBER.exec(text);
  if (!m) return null;
  let digits = (m[2] + (m[3] ?? '')).replace(/^0+/, '');
  if (digits === '') return '0e0';
  let exponent = BigInt(m[4] ?? '0') - BigInt((m[3] ?? '').length);
  const trimmed = digits.replace(/0+$/, '');
  exponent += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `${m[1]}${digits}e${exponent}`;
}

/**
 * The longest encoded value kept as it is, in UTF-8 bytes. PostgreSQL's b-tree entries hold about
 * 2.7 kB, and the lookup index holds the business, the path (up to about 1 kB) and the order beside
 * the value: a longer string made the write fail. Filters take at most 1,024 characters.
 */
export const VALUE_MAX_BYTES = 1000;

/**
 * An encoded value as the side table stores it and a filter looks it up: as it is, or past
 * VALUE_MAX_BYTES as `h:` and its SHA-256, which no other encoding starts with. Equal values stay
 * equal, so matching stays exact.
 */
export const fittedValue = (encoded: string): string =>
  encoded.length * 3 <= VALUE_MAX_BYTES || Buffer.byteLength(encoded) <= VALUE_MAX_BYTES
    ? encoded
    : `h:${createHash('sha256').update(encoded).digest('hex')}`;

function scalarOf(value: unknown): string | null {
  if (typeof value === 'string') return fittedValue(`s:${value}`);
  if (typeof value === 'boolean') return `b:${value}`;
  // Stored numbers are JavaScript doubles written by JSON.stringify, so String(value) is their exact text.
  if (typeof value === 'number') return Number.isFinite(value) ? `n:${canonicalNumber(String(value))}` : null;
  return null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Every path a filter can name, with its encoded value. Keys a filter cannot name (other
 * characters, over 64 characters, deeper than the path limit) are left out with everything under
 * them; arrays are leaves, as in SQLite's `$."key"` paths.
 */
export function propertyPaths(properties: unknown): Array<{ path: string; value: string | null }> {
  const out: Array<{ path: string; value: string | null }> = [];
  const walk = (object: Record<string, unknown>, prefix: string, depth: number) => {
    for (const [key, value] of Object.entries(object)) {
      if (!PROPERTY_SEGMENT.test(key)) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      out.push({ path, value: scalarOf(value) });
      if (isObject(value) && depth + 1 < PROPERTY_PATH_MAX_SEGMENTS) walk(value, path, depth + 1);
    }
  };
  const parsed = readJson<unknown>(properties);
  if (isObject(parsed)) walk(parsed, '', 0);
  return out;
}
