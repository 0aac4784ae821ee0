import { type RouteDefinition, SerializerSelector } from '@fastify/fast-json-stringify-compiler';
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
    /** The actor of its writes. */
    apiKeyId: string;
    /** Null: every scope. */
    apiKeyScopes: Scope[] | null;
    /** Without `margin:read`, answers leave out cost fields. */
    hidesMargin: boolean;
    /** False for a test key, on a sandbox (src/sandbox). */
    livemode: boolean;
  }
  interface FastifyContextConfig {
    extension?: boolean;
  }
}

/** pino options: JSON lines at `level`, with trace and span when tracing is on, and keys always redacted. */
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

export function fastifyOptions(
  config: Config,
  logger: FastifyServerOptions['logger'],
  errorHandler: ReturnType<typeof createErrorHandler>,
): FastifyServerOptions {
  return {
    logger: logger ?? false,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    ...connectionOptions(config),
    // The socket's address, or X-Forwarded-For as far as TRUST_PROXY's proxies go.
    trustProxy: config.trustProxy ?? false,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId('req');
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
    // Router errors (bad URL encoding, overlong ids) get the same body as the rest.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      return errorHandler(error, request, reply);
    },
  };
}

/** Before every route. Synchronous hooks take a callback: an async one costs every request two promises. */
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
  app.decorateRequest('livemode', true);
  app.decorateRequest('apiKeyScopes', null);
  app.decorateRequest('hidesMargin', false);
  app.setNotFoundHandler(answerNotFound);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.schema && !route.schema.querystring) route.schema.querystring = NoQuery;
  });
}

const buildSerializers = SerializerSelector();
/** Compiled response serializers by shared schemas and options, then by the route's schema. */
const compiled = new Map<string, Map<string, (data: unknown) => string>>();

/**
 * Fastify's own serializer compiler (fast-json-stringify), remembering what it compiled: an app
 * compiles each response schema once, and so does every later app of the process with the same
 * schemas (a test process makes one app per suite, each compiling about 150 schemas).
 */
function sharedSerializers(externalSchemas: unknown, options?: Parameters<typeof buildSerializers>[1]) {
  const compile = buildSerializers(externalSchemas, options);
  const context = JSON.stringify([externalSchemas, options]);
  let bySchema = compiled.get(context);
  if (!bySchema) compiled.set(context, (bySchema = new Map()));
  return (route: RouteDefinition) => {
    const key = JSON.stringify(route.schema);
    let serialize = bySchema.get(key);
    if (!serialize) bySchema.set(key, (serialize = compile(route)));
    return serialize;
  };
}
