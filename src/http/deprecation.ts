import type { FastifyReply } from 'fastify';

/** RFC 9745 `Deprecation` and RFC 8594 `Sunset` headers; CHANGELOG.md lists each with its replacement. */
export interface Deprecated {
  /** ISO date. */
  since: string;
  /** ISO date after which it may be gone. */
  sunset: string;
}

export function markDeprecated(reply: FastifyReply, { since, sunset }: Deprecated): void {
  reply.header('deprecation', `@${Math.floor(Date.parse(since) / 1000)}`);
  reply.header('sunset', new Date(sunset).toUTCString());
}
