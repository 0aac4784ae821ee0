import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { Type } from 'typebox';

const AUTH_HEADERS = {
  'x-business-id': Type.String({ description: 'The business (tenant) id; also written X-Business-ID', examples: ['bus_1234567890abcdef'] }),
  'x-api-key': Type.String({ description: 'A live API key of that business (secret; never in client-side code)' }),
};
const IDEMPOTENCY_HEADER = {
  'idempotency-key': Type.Optional(Type.String({
    maxLength: 255,
    description: 'Makes the request safe to retry for 24 hours: a repeat replays the first answer with Idempotent-Replayed: true',
  })),
};

const errorRef = (description: string) => ({ description, $ref: 'ErrorResponse#' });

function errorResponses(method: string) {
  return {
    400: errorRef('Validation failed (fieldErrors keyed by path), or a malformed request'),
    401: errorRef('Missing or invalid credentials'),
    404: errorRef('Not found, or owned by another business'),
    ...(method === 'POST' || method === 'PATCH'
      ? {
        409: errorRef('Conflict, or the Idempotency-Key is in use by a request still running'),
        413: errorRef('Body larger than the limit'),
        415: errorRef('Body is not application/json'),
        422: errorRef('The Idempotency-Key was used with a different request'),
      }
      : {}),
    429: errorRef('Rate limited; see Retry-After'),
    500: errorRef('Unexpected error; quote the requestId to support'),
  };
}

/**
 * Adds what every operation shares (auth headers, Idempotency-Key, error responses) to the
 * document only, and marks Supplyline's own operations with `x-supplyline-extension`.
 */
export function openapiOptions(): FastifyDynamicSwaggerOptions {
  const extensions = new Set<string>();
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Supplyline',
        version: '1.0.0',
        description: 'Supplier-side trading service: items, buyers, price lists, orders and invoices.',
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
    transform: ({ schema, url, route }) => {
      if (!url.startsWith('/api/')) return { schema, url };
      const method = String(route.method);
      if ((route.config as { extension?: boolean } | undefined)?.extension) extensions.add(`${method.toLowerCase()} ${url.replace(/:(\w+)/g, '{$1}')}`);
      const own = (schema.headers as { properties?: Record<string, never> } | undefined)?.properties ?? {};
      const headers = { ...AUTH_HEADERS, ...(method === 'POST' || method === 'PATCH' ? IDEMPOTENCY_HEADER : {}), ...own };
      return {
        url,
        schema: {
          ...schema,
          headers: Type.Object(headers),
          response: { ...errorResponses(method), ...(schema.response as object) },
        } as typeof schema,
      };
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, any> }).openapiObject;
      for (const [path, operations] of Object.entries(doc.paths ?? {})) {
        for (const [method, operation] of Object.entries(operations as Record<string, any>)) {
          if (extensions.has(`${method} ${path}`)) operation['x-supplyline-extension'] = true;
        }
      }
      return doc;
    },
  };
}
