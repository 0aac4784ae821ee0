export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = Record<string, unknown>;

/** PostgreSQL jsonb arrives parsed, SQLite text as a string. */
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

/** Objects merge recursively, arrays and scalars replace, null is stored (never deletes a key). */
export function deepMerge(target: JsonObject | null, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...(target ?? {}) };
  for (const [key, value] of Object.entries(patch)) {
    const current = out[key];
    // defineProperty: a key named __proto__ must stay data.
    Object.defineProperty(out, key, {
      value: isPlainObject(value) && isPlainObject(current) ? deepMerge(current, value) : value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Sorted keys, so equal bodies give equal idempotency fingerprints. */
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
 * Whether a parsed whole number probably lost digits: past 2^53 a double keeps about 16, so one
 * whose shortest text needs more than 15 was not stored as written (1e21 or 2^60 are exact).
 */
function losesDigits(value: number): boolean {
  if (!Number.isInteger(value) || Number.isSafeInteger(value)) return false;
  const mantissa = String(Math.abs(value)).split('e')[0].replace('.', '').replace(/0+$/, '');
  return mantissa.length > 15;
}

/** Why a properties value is unacceptable, or null; depth is checked before recursing. */
export function checkProperties(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node === 'number') {
      if (!Number.isFinite(node))
        return 'must not contain numbers beyond ±1.7976931348623157e308; send them as strings';
      if (losesDigits(node)) {
        return (
          `must not contain whole numbers beyond ±${Number.MAX_SAFE_INTEGER} with more than 15 significant digits, ` +
          'which lose digits; send them as strings'
        );
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
