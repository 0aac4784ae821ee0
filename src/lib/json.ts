export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = Record<string, unknown>;

/** Reads a JSON column: PostgreSQL jsonb arrives parsed, SQLite text arrives as a string. */
export function readJson<T = JsonObject>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function writeJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Merges a patch into a stored properties object: objects merge recursively, arrays and
 * scalars replace, and null is stored as a value (it never deletes a key).
 */
export function deepMerge(target: JsonObject | null, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...(target ?? {}) };
  for (const [key, value] of Object.entries(patch)) {
    const current = out[key];
    // defineProperty, not assignment: a key named __proto__ must stay data, never a prototype.
    Object.defineProperty(out, key, {
      value: isPlainObject(value) && isPlainObject(current) ? deepMerge(current, value) : value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Canonical JSON text (sorted keys), so equal bodies give equal idempotency fingerprints. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export const PROPERTIES_MAX_BYTES = 64 * 1024;
export const PROPERTIES_MAX_DEPTH = 32;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Whether a parsed whole number probably lost digits: past 2^53 a double keeps about 16 of them,
 * so a number whose shortest text needs more than 15 (9007199254740993 arrives as ...992) was not
 * stored as written, while 1e21 or 2^60 are exact.
 */
function losesDigits(value: number): boolean {
  if (!Number.isInteger(value) || Number.isSafeInteger(value)) return false;
  const mantissa = String(Math.abs(value)).split('e')[0].replace('.', '').replace(/0+$/, '');
  return mantissa.length > 15;
}

/** Returns why a properties value is unacceptable, or null. Depth is checked before anything recursive. */
export function checkProperties(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    // A number JSON.parse could not hold exactly would be stored as something else (1e309 as null).
    if (typeof node === 'number') {
      if (!Number.isFinite(node))
        return 'must not contain numbers beyond ±1.7976931348623157e308; send them as strings';
      if (losesDigits(node)) {
        return `must not contain whole numbers beyond ±${Number.MAX_SAFE_INTEGER} with more than 15 significant digits, which lose digits; send them as strings`;
      }
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    if (depth > PROPERTIES_MAX_DEPTH) return `must be at most ${PROPERTIES_MAX_DEPTH} levels deep`;
    for (const key of Object.keys(node)) {
      if (!Array.isArray(node) && FORBIDDEN_KEYS.has(key)) return `must not contain the key '${key}'`;
      stack.push([(node as Record<string, unknown>)[key], depth + 1]);
    }
  }
  if (Buffer.byteLength(JSON.stringify(value)) > PROPERTIES_MAX_BYTES) {
    return `must be at most ${PROPERTIES_MAX_BYTES} bytes as JSON`;
  }
  return null;
}
