import { createHash } from 'node:crypto';
import { PROPERTY_PATH_MAX_SEGMENTS, PROPERTY_SEGMENT } from '../../db/dialect-json.ts';
import { readJson } from '../../lib/json.ts';

/**
 * The paths and values of an order's properties, as the side tables hold them. A value keeps its
 * JSON type so that matching follows the JSON functions (jsonPathEquals): `s:<text>`, `b:true`,
 * `n:<canonical>` (456, 456.0 and 4.56e2 are all `n:456e0`); NULL for null, objects and arrays,
 * which are present but never match a value.
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

/** UTF-8 bytes: PostgreSQL's b-tree entries hold about 2.7 kB, and the index holds the path too. */
export const VALUE_MAX_BYTES = 1000;

/** Past VALUE_MAX_BYTES, `h:` and its SHA-256, which no other encoding starts with: equal values stay equal. */
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

/** Keys a filter cannot name are left out with everything under them; arrays are leaves, as in SQLite's paths. */
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
