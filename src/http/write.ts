import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { canonicalJson } from '../lib/json.ts';
import { badRequest } from '../lib/errors.ts';
import { requestTraceParent } from '../telemetry/spans.ts';
import type { WriteContext, WriteResponse, WriteRunner, WriteScope } from '../write/runner.ts';

/**
 * The one way a route writes: runs `work` through the write runner and sends what it returns.
 * A POST or PATCH honours `Idempotency-Key` with the replay store, unless its route says
 * `config: { replays: false }` (order ingestion); a DELETE takes no key, its repeat being a 404.
 * Resolves once sent, so Fastify never tries a second answer.
 */
export type RunWrite = (
  request: FastifyRequest,
  reply: FastifyReply,
  work: (ctx: WriteContext) => Promise<WriteResponse>,
) => Promise<void>;

/** 1 to 255 printable ASCII characters. */
export const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

function fingerprintOf(request: FastifyRequest): string {
  return (
    createHash('sha256')
      // No trailing slash, so /items and /items/ are one request.
      .update(`${request.method} ${request.url.replace(/\/+(?=\?|$)/, '')}\n${canonicalJson(request.body ?? null)}`)
      .digest('hex')
  );
}

async function send(reply: FastifyReply, response: WriteResponse, replayed = false): Promise<void> {
  reply.code(response.status);
  if (response.headers) reply.headers(response.headers);
  if (replayed) reply.header('idempotent-replayed', 'true');
  await reply.send(response.body === undefined ? null : response.body);
}

const writeScopeOf = (request: FastifyRequest): WriteScope => ({
  businessId: request.businessId,
  actor: { type: 'api_key', id: request.apiKeyId, name: null },
  requestId: request.id,
  traceParent: requestTraceParent(request),
});

const replays = (request: FastifyRequest) =>
  (request.method === 'POST' || request.method === 'PATCH') && request.routeOptions.config.replays !== false;

export function createRunWrite(runner: WriteRunner): RunWrite {
  return async (request, reply, work) => {
    const scope = writeScopeOf(request);
    const key = request.headers['idempotency-key'];
    if (key === undefined || !replays(request)) return send(reply, await runner.run(scope, work));
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw badRequest('Invalid idempotency key format');
    const { response, replayed } = await runner.runIdempotent(
      scope,
      { key, fingerprint: fingerprintOf(request) },
      work,
    );
    // A replayed error names this request, matching its X-Request-Id.
    const body = response.body as { requestId?: string } | undefined;
    if (replayed && response.status >= 400 && body && typeof body === 'object') body.requestId = request.id;
    return send(reply, response, replayed);
  };
}
