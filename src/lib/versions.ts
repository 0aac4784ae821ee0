import { preconditionFailed } from './errors.ts';

/** The versions If-Match accepts: `'*'` for any, else those listed (a list naming none matches nothing). */
export type ExpectedVersions = '*' | number[];

export function checkVersion(expected: ExpectedVersions | undefined, current: number, noun: string): void {
  if (expected === undefined || expected === '*' || expected.includes(current)) return;
  throw preconditionFailed(`The ${noun} has changed: its current version is ${current}`);
}
