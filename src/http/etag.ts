import type { ExpectedVersions } from '../lib/versions.ts';

export const etagOf = (version: number) => `"${version}"`;

/** `If-Match` (`"3"`, `W/"3"`, a list, or `*`) as accepted versions; undefined when not sent. */
export function parseIfMatch(header: string | undefined): ExpectedVersions | undefined {
  if (header === undefined) return undefined;
  const versions: number[] = [];
  for (const tag of header.split(',').map((t) => t.trim())) {
    if (tag === '*') return '*';
    const text = tag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
    // Only the exact text of a version matches it ("03" is not version 3).
    if (/^(0|[1-9]\d{0,14})$/.test(text)) versions.push(Number(text));
  }
  return versions;
}
