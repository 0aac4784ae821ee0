import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, badRequest, errorBody, validationError } from './errors.ts';
import { toFieldErrors } from './validation.ts';

function partOf(request: FastifyRequest, context: string | undefined): unknown {
  switch (context) {
    case 'querystring': return request.query;
    case 'params': return request.params;
    case 'headers': return request.headers;
    default: return request.body;
  }
}

/** Maps anything thrown to an ApiError; unknown errors become a 500 that reveals nothing. */
export function toApiError(error: FastifyError, request: FastifyRequest, bodyLimit: number): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation) return validationError(toFieldErrors(error.validation as never, partOf(request, error.validationContext)));
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', `Request body is larger than ${bodyLimit} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return badRequest('Request body is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badRequest('Request body is not valid JSON');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return badRequest('A path parameter is too long');
    case 'FST_ERR_BAD_URL':
      return badRequest('The URL is malformed');
  }
  if (/forbidden prototype property/i.test(error.message)) {
    return badRequest('Request body must not contain the keys __proto__ or constructor.prototype');
  }
  if (error instanceof SyntaxError) return badRequest('Request body is not valid JSON');
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return badRequest('Malformed request');
  }
  return new ApiError('INTERNAL_ERROR', 'Internal server error');
}

export function createErrorHandler(bodyLimit: number) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error, request, bodyLimit);
    if (apiError.status >= 500) {
      // Logged with context for us; the client gets only the generic text and the request id.
      request.log.error({ err: error, businessId: request.businessId || undefined }, 'request failed');
    }
    return reply.code(apiError.status).send(errorBody(apiError, request.id));
  };
}
