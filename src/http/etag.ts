import { badRequest } from '../lib/errors.ts';
import type { ExpectedVersions } from '../lib/versions.ts';

export const etagOf = (version: number) => `"${version}"`;

/** An entity tag (RFC 9110 8.8.3): quoted, optionally weak. */
const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/**
 * `If-Match` (`"3"`, `W/"3"`, a list, or `*`) as accepted versions; undefined when not sent. A value
 * that is no entity tag is a 400: read as matching nothing, it was answered "has changed" (412).
 */
export function parseIfMatch(header: string | undefined): ExpectedVersions | undefined {
  if (header === undefined) return undefined;
  const versions: number[] = [];
  for (const tag of header.split(',').map((t) => t.trim())) {
    if (tag === '*') return '*';
    if (!ENTITY_TAG.test(tag)) throw badRequest('If-Match must be entity tags as ETag gives them ("3"), or *');
    const text = tag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
    // Only the exact text of a version matches it ("03" is not version 3).
    if (/^(0|[1-9]\d{0,14})$/.test(text)) versions.push(Number(text));
  }
  return versions;
}
