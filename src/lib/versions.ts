import { preconditionFailed } from './errors.ts';

/**
 * The versions a conditional write accepts, parsed from If-Match at the edge: `'*'` for any
 * current version, otherwise the listed ones (a list that names none matches nothing).
 */
export type ExpectedVersions = '*' | number[];

/** Throws 412 unless the resource's current version is one the writer expected. */
export function checkVersion(expected: ExpectedVersions | undefined, current: number, noun: string): void {
  if (expected === undefined || expected === '*' || expected.includes(current)) return;
  throw preconditionFailed(`The ${noun} has changed: its current version is ${current}`);
}
