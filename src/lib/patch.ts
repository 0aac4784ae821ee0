import { badRequest } from './errors.ts';

/** The contract's answer to a PATCH with nothing to change (4.4 rule 7, 7.2). */
export const NOTHING_TO_UPDATE = 'No valid fields provided for update';

/** Not left out, not an empty list, not an empty object. */
const asksForSomething = (value: unknown) =>
  value !== undefined && (typeof value !== 'object' || value === null || Object.keys(value).length > 0);

/** 400 for a PATCH body none of whose parts asks for anything (`{}`, `{"order": {}}`). */
export function requireSomethingToUpdate(input: object): void {
  if (!Object.values(input).some(asksForSomething)) throw badRequest(NOTHING_TO_UPDATE);
}
