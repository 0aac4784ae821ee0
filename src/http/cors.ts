import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * CORS for the API alone, and only for the exact origins of CORS_ORIGINS (docs/decisions/0045):
 * browsers on those origins may call /api/* and read /openapi.json with an API key in headers.
 * Never a wildcard, never credentials (the API takes no cookies), never the console, whose
 * cookie sessions must stay same-origin. Unset, nothing is registered.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[] | null): Promise<void> {
  if (!origins) return;
  const allowed = new Set(origins);
  await app.register(cors, {
    // Per request: the API's paths from an allowed origin get the headers; anything else none, and a
    // preflight anywhere else is answered as an unknown route.
    delegator: (request, callback) => {
      const origin = request.headers.origin;
      callback(null, {
        ...OPTIONS,
        origin: origin !== undefined && allowed.has(origin) && isApiPath(request) ? origin : false,
      });
    },
  });
}

const OPTIONS = {
  methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
  // allowedHeaders is left unset: the headers a preflight asks for are allowed (X-API-Key,
  // Idempotency-Key, If-Match and the caller's own); with exact origins and no credentials they give
  // a page nothing it lacks.
  exposedHeaders: [
    'ETag',
    'X-Request-Id',
    'Retry-After',
    'RateLimit',
    'RateLimit-Policy',
    'Supplyline-Event-Sequence',
    'Idempotent-Replayed',
    'Location',
    'Deprecation',
    'Sunset',
  ],
  credentials: false,
  strictPreflight: false,
  maxAge: 600,
};

/** The matched route when there is one (not the preflight's catch-all), else the path as sent. */
function isApiPath(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  const path = route && route !== '*' ? route : request.url.split('?')[0];
  return (path.startsWith('/api/') && !path.includes('..')) || path === '/openapi.json';
}
