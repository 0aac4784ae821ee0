import { PROPERTY_PATH_MAX_SEGMENTS, PROPERTY_SEGMENT } from '../db/dialect-json.ts';
import type { PropertyFilter } from '../db/list.ts';
import { validationError } from '../lib/errors.ts';

export interface PropertyFilterInput {
  propertyPath?: string;
  propertyValue?: string;
  propertyExists?: boolean;
}

/** Applies the contract's rules 2 and 3 of 4.1 and bounds the path; returns the filter to run. */
export function readPropertyFilter(query: PropertyFilterInput): PropertyFilter | null {
  const { propertyPath, propertyValue, propertyExists } = query;
  if (propertyValue !== undefined && propertyExists !== undefined) {
    throw validationError({ propertyValue: 'propertyValue and propertyExists cannot be used together' });
  }
  if (propertyPath === undefined) {
    if (propertyValue !== undefined) throw validationError({ propertyPath: 'Required when propertyValue is given' });
    if (propertyExists !== undefined) throw validationError({ propertyPath: 'Required when propertyExists is given' });
    return null;
  }
  const segments = propertyPath.split('.');
  if (segments.length > PROPERTY_PATH_MAX_SEGMENTS || !segments.every((s) => PROPERTY_SEGMENT.test(s))) {
    throw validationError({
      propertyPath: `Must be a dot path of at most ${PROPERTY_PATH_MAX_SEGMENTS} segments made of letters, digits, '_', '$' or '-'`,
    });
  }
  if (propertyValue !== undefined) return { segments, value: propertyValue };
  return { segments, exists: propertyExists ?? true };
}
