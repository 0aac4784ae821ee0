import { deepMerge, PROPERTIES_MAX_BYTES, readJson, type JsonObject } from './json.ts';
import { validationError } from './errors.ts';

/**
 * Deep-merges a PATCH into stored properties and returns the JSON to store. The PATCH's values were
 * checked with the request; the merged size only when the PATCH grows it past the limit. What is
 * stored already never blocks a PATCH (docs/decisions/0007).
 */
export function mergeStoredProperties(stored: unknown, patch: JsonObject, field: string): string {
  const before = readJson(stored);
  const merged = JSON.stringify(deepMerge(before, patch));
  const size = Buffer.byteLength(merged);
  if (size > PROPERTIES_MAX_BYTES && size > Buffer.byteLength(JSON.stringify(before ?? {}))) {
    throw validationError({ [field]: `Once merged, properties must be at most ${PROPERTIES_MAX_BYTES} bytes as JSON` });
  }
  return merged;
}
