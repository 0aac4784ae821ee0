import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * CORS for the API alone, for the exact origins of CORS_ORIGINS (docs/decisions/0045). Never a
 * wildcard, never credentials, never the console, whose cookie sessions stay same-origin.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[] | null): Promise<void> {
  if (!origins) return;
  const allowed = new Set(origins);
  await app.register(cors, {
    // API paths from an allowed origin get the headers; a preflight elsewhere is an unknown route.
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
  // allowedHeaders unset: a preflight's requested headers are allowed; with exact origins and no
  // credentials they give a page nothing it lacks.
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

/** The matched route (not the preflight's catch-all), else the path as sent. */
function isApiPath(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  const path = route && route !== '*' ? route : request.url.split('?')[0];
  return (path.startsWith('/api/') && !path.includes('..')) || path === '/openapi.json';
}
