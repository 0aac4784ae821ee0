import type { FastifyReply } from 'fastify';

/**
 * Marks an answer as using something due to go (RFC 9745 `Deprecation`, RFC 8594 `Sunset`).
 * CHANGELOG.md lists every deprecation with what to use instead. It is still answered as before
 * until the sunset, at least one release later.
 */
export interface Deprecated {
  /** When it was deprecated (an ISO date). */
  since: string;
  /** After this date it may be gone (an ISO date). */
  sunset: string;
}

export function markDeprecated(reply: FastifyReply, { since, sunset }: Deprecated): void {
  reply.header('deprecation', `@${Math.floor(Date.parse(since) / 1000)}`);
  reply.header('sunset', new Date(sunset).toUTCString());
}
