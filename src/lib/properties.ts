import { checkProperties, deepMerge, readJson, type JsonObject } from '../lib/json.ts';
import { validationError } from './errors.ts';

/**
 * Deep-merges a PATCH into stored properties and returns the JSON to store. The size and depth
 * limits apply to the merged result too, or many small PATCHes could grow it without bound.
 */
export function mergeStoredProperties(stored: unknown, patch: JsonObject, field: string): string {
  const merged = deepMerge(readJson(stored), patch);
  const problem = checkProperties(merged);
  if (problem) throw validationError({ [field]: `Once merged, properties ${problem}` });
  return JSON.stringify(merged);
}
