import { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Config } from '../config.ts';
import type { Scope } from '../businesses/scopes.ts';
import { notFound } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { activeTraceFields } from '../telemetry/spans.ts';
import { connectionOptions } from './connection.ts';
import type { createErrorHandler } from './error-handler.ts';
import { checkQueryEncoding } from './query-encoding.ts';
import { NoQuery } from './schema.ts';

declare module 'fastify' {
  interface FastifyRequest {
    businessId: string;
    /** The API key that authenticated the request: the actor of its writes. */
    apiKeyId: string;
    /** Its scopes (null: every scope); src/businesses/scopes.ts. */
    apiKeyScopes: Scope[] | null;
    /** The key lacks `margin:read`: its answers leave out cost fields (src/businesses/margin.ts). */
    hidesMargin: boolean;
  }
  interface FastifyContextConfig {
    /** Supplyline's own operation, marked `x-supplyline-extension` in the OpenAPI document. */
    extension?: boolean;
  }
}

/**
 * pino options for the server: JSON lines at `level`, each with the trace and span it was written in
 * when tracing is on, and keys never written even if a header is logged.
 */
export function loggerOptions(level: string) {
  return {
    level,
    mixin: activeTraceFields,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]'],
      censor: '[redacted]',
    },
  };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function answerNotFound(request: FastifyRequest): Promise<never> {
  throw notFound(`Route ${request.method} ${request.url.split('?')[0]} not found`);
}

/** The HTTP server's options: logging, limits and timeouts, request ids, and errors from the router answered like the rest. */
export function fastifyOptions(
  config: Config,
  logger: FastifyServerOptions['logger'],
  errorHandler: ReturnType<typeof createErrorHandler>,
): FastifyServerOptions {
  return {
    logger: logger ?? false,
    // registerRequestLog writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    ...connectionOptions(config),
    // request.ip: the socket's address, or X-Forwarded-For's as far as the proxies TRUST_PROXY names.
    trustProxy: config.trustProxy ?? false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId('req');
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Errors raised by the router itself (bad URL encoding, overlong ids) get the same body as the rest.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      return errorHandler(error, request, reply);
    },
  };
}

/**
 * What every request gets before its route: its id echoed, its query checked for encoding, the
 * request fields authentication fills, and unknown query parameters refused on every API operation.
 * Hooks whose work is synchronous take a callback: an async one costs every request two promises.
 */
export function registerRequestBasics(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('preValidation', (request, _reply, done) => {
    checkQueryEncoding(request.url);
    done();
  });
  app.decorateRequest('businessId', '');
  app.decorateRequest('apiKeyId', '');
  app.decorateRequest('apiKeyScopes', null);
  app.decorateRequest('hidesMargin', false);
  app.setNotFoundHandler(answerNotFound);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.schema && !route.schema.querystring) route.schema.querystring = NoQuery;
  });
}
