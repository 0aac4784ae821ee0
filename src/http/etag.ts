import { Type } from 'typebox';
import { ApiError, badRequest } from '../lib/errors.ts';
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

/** The 412 of a resource that has no ETag, as a response schema. */
export const NO_ETAG_RESPONSE = Type.Unsafe<unknown>({
  $ref: 'ErrorResponse#',
  description:
    'If-Match was sent, but this resource has no ETag, so it cannot match (only * does); nothing was changed',
});

/**
 * A PATCH of a resource without versions (items, buyers, webhook endpoints) that names one in
 * If-Match: it cannot match, so 412 (RFC 9110 13.1.1), rather than an overwrite the caller
 * believed guarded. `*` matches any current record.
 */
export function refuseIfMatch(header: string | undefined, plural: string): void {
  if (header === undefined || parseIfMatch(header) === '*') return;
  throw new ApiError(
    'PRECONDITION_FAILED',
    `${plural} have no ETag, so If-Match cannot match: send the PATCH without it (it is not guarded)`,
  );
}
