import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/errors.ts';
import {
  ApiError,
  badRequest,
  errorBody,
  SERVICE_UNAVAILABLE_MESSAGE,
  UNAVAILABLE_RETRY_AFTER_SECONDS,
  validationError,
} from '../lib/errors.ts';
import { requestTraceFields } from '../telemetry/spans.ts';
import { NOT_JSON_MESSAGE } from './json-body.ts';
import { INGESTION_KEY_HINT, invalidKey } from './write.ts';
import { bodyError, toFieldErrors } from '../lib/validation.ts';

/** A time whose offset's `+` was sent unencoded, and so arrived as a space (`…T10:00:00 10:00`). */
const PLUS_AS_SPACE = /^\d{4}-\d\d-\d\dT[\d:.]+ \d\d:?\d\d$/;
export const PLUS_AS_SPACE_HINT =
  "A + in a query string is read as a space: send a time zone offset's + as %2B (2030-01-01T00:00:00%2B10:00), or use Z";
const hasPlusAsSpace = (query: unknown) =>
  typeof query === 'object' &&
  query !== null &&
  Object.values(query).some((value) => typeof value === 'string' && PLUS_AS_SPACE.test(value));

export const DATE_TIME_HINT =
  'Times are RFC 3339 date-times with a time and a zone, years 0001 to 9999: 2026-01-01T00:00:00Z or 2026-01-01T10:00:00+10:00';

/** A refusal with what to do about a time it names: a `+` sent unencoded, else the form a time takes. */
function withTimeHint(refused: ApiError, plusAsSpace = false): ApiError {
  const namesTime = Object.values(refused.fieldErrors ?? {}).includes('Invalid date-time');
  const hint = plusAsSpace ? PLUS_AS_SPACE_HINT : namesTime ? DATE_TIME_HINT : undefined;
  return hint ? new ApiError('VALIDATION_ERROR', refused.message, refused.fieldErrors, hint) : refused;
}

function partOf(request: FastifyRequest, context: string | undefined): unknown {
  switch (context) {
    case 'querystring':
      return request.query;
    case 'params':
      return request.params;
    case 'headers':
      return request.headers;
    default:
      return request.body;
  }
}

/** Maps anything thrown to an ApiError; unknown errors become a 500 that reveals nothing. */
export function toApiError(error: FastifyError, request: FastifyRequest, bodyLimit: number): ApiError {
  if (error instanceof ApiError) return error;
  // A header a route declares a pattern for: the Idempotency-Key (the ingestion call's is 64 hex digits).
  if (
    error.validation &&
    error.validationContext === 'headers' &&
    (error.validation as Array<{ instancePath?: string }>).some((v) => v.instancePath === '/idempotency-key')
  ) {
    return invalidKey(INGESTION_KEY_HINT);
  }
  if (error.validation && error.validationContext === 'body')
    return withTimeHint(bodyError(error.validation as never, request.body));
  if (error.validation) {
    const part = partOf(request, error.validationContext);
    const refused = validationError(toFieldErrors(error.validation as never, part));
    return withTimeHint(refused, error.validationContext === 'querystring' && hasPlusAsSpace(part));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', `Request body is larger than ${bodyLimit} bytes`);
    // A Content-Type Fastify cannot read (";", "application/json/x") is refused before the body parser.
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return badRequest('A path parameter is too long');
    case 'FST_ERR_BAD_URL':
      return badRequest('The URL is malformed');
  }
  if (error instanceof SyntaxError) return badRequest(NOT_JSON_MESSAGE);
  if (isDatabaseUnavailable(error)) return new ApiError('SERVICE_UNAVAILABLE', SERVICE_UNAVAILABLE_MESSAGE);
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return badRequest('Malformed request');
  }
  return new ApiError('INTERNAL_ERROR', 'Internal server error');
}

/** How much of an oversized body is read and thrown away, so that the client gets to read its 413. */
const DISCARD_FACTOR = 4;
const DISCARD_MS = 5000;

/**
 * An oversized body is refused before it is read. Closing the connection at once would reset it
 * while the client is still sending, and most clients then report a broken pipe instead of the
 * 413. So the rest of the body is read and discarded, up to a few times the limit or a few
 * seconds; past that the connection is closed.
 */
function discardRestOfBody(request: FastifyRequest, reply: FastifyReply, bodyLimit: number): void {
  reply.removeHeader('connection');
  const raw = request.raw;
  const socket = raw.socket;
  // An injected request (app.inject) has a stand-in socket: no connection to keep open or close.
  if (raw.complete || typeof socket?.destroy !== 'function') return;
  let discarded = 0;
  const stop = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(stop, DISCARD_MS);
  timer.unref();
  raw.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_FACTOR * bodyLimit) stop();
  });
  raw.on('end', () => clearTimeout(timer));
  raw.on('close', () => clearTimeout(timer));
  raw.resume();
}

export function createErrorHandler(bodyLimit: number) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error, request, bodyLimit);
    if (apiError.headers) reply.headers(apiError.headers);
    if (apiError.code === 'SERVICE_UNAVAILABLE') {
      reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      // The outage is logged without the driver's error text, which may name hosts or files.
      request.log.warn(
        {
          code: (error as { code?: unknown }).code,
          businessId: request.businessId || undefined,
          ...requestTraceFields(request),
        },
        'database unavailable',
      );
    } else if (apiError.status >= 500) {
      // Logged with context for us; the client gets only the generic text and the request id.
      request.log.error(
        { err: error, businessId: request.businessId || undefined, ...requestTraceFields(request) },
        'request failed',
      );
    }
    if (apiError.code === 'PAYLOAD_TOO_LARGE') discardRestOfBody(request, reply, bodyLimit);
    return reply.code(apiError.status).send(errorBody(apiError, request.id));
  };
}
