import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { canonicalJson } from '../lib/json.ts';
import { ApiError } from '../lib/errors.ts';
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

/** The contract's 400 for an Idempotency-Key it refuses, with what the key must be as its hint. */
export const invalidKey = (
  hint = 'An Idempotency-Key is 1 to 255 printable ASCII characters, without spaces: a UUID is a good one',
) => new ApiError('VALIDATION_ERROR', 'Invalid idempotency key format', undefined, hint);

/** Order ingestion's key is not chosen but derived from its body (the contract's 4.2). */
export const INGESTION_KEY_HINT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the key's recipe, shown as written
  'On this call the key is the hex SHA-256 of `${orderId}-${businessId}-order-integration`, the two ids of the body ' +
  'joined as written, with nothing else hashed (no trailing newline)';

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
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw invalidKey();
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
