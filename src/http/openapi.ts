import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { nameComponents } from './openapi-components.ts';
import { errorExample, HEADERS, SECURITY_SCHEMES } from './openapi-shared.ts';
import { requiredScopes } from '../businesses/scopes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 2xx answers carry `ETag: "<version>"`. */
    etag?: boolean;
    /** False for a POST or PATCH that never replays a stored answer. */
    replays?: boolean;
    /** The body names another resource, which may be missing (404). */
    namesOther?: boolean;
  }
}

const IDEMPOTENCY_HEADER = {
  'idempotency-key': Type.Optional(
    Type.String({
      maxLength: 255,
      description:
        'Makes the request safe to retry for 24 hours: a repeat replays the first answer with Idempotent-Replayed: true',
    }),
  ),
};

const CONSISTENT_AFTER_HEADER = {
  'consistent-after': Type.Optional(
    Type.String({
      maxLength: 17,
      pattern: '^([0-9]{1,16}|[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8})$',
      description:
        'Read no older than this point: a Supplyline-Position value from an earlier answer, or an event sequence of the business. ' +
        'Every read already sees every write committed before it began, on any instance; this names a point explicitly.',
    }),
  ),
};

const errorRef = (description: string) => ({ description, $ref: 'ErrorResponse#' });

function errorResponses(method: string, url: string, namesOther: boolean) {
  const writes = method === 'POST' || method === 'PATCH';
  // A DELETE is a write too: it may conflict, but takes no Idempotency-Key.
  const changes = writes || method === 'DELETE';
  // A path id can be missing, and so can a resource the body names; nothing else answers 404.
  const canMiss = url.includes(':') || namesOther;
  return {
    400: errorRef('Validation failed (fieldErrors keyed by path), or a malformed request'),
    401: errorRef('Missing or invalid credentials (X-Business-Id and X-API-Key)'),
    403: errorRef(
      "The API key lacks the scope this operation needs (the message names it; see the operation's security)",
    ),
    ...(canMiss ? { 404: errorRef('Not found, or owned by another business') } : {}),
    ...(changes
      ? {
          409: errorRef(
            'Conflict (the message says with what: the state of the resource, a sandbox being reset or deleted), ' +
              'or the Idempotency-Key is in use by a request still running',
          ),
        }
      : {}),
    413: errorRef('Body larger than the limit'),
    415: errorRef('Body is not application/json'),
    ...(writes ? { 422: errorRef('The Idempotency-Key was used with a different request') } : {}),
    429: errorRef('Rate limited; wait Retry-After seconds'),
    500: errorRef('Unexpected error; quote the requestId to support'),
    503: errorRef('The database is unavailable for now; retry after Retry-After seconds'),
  };
}

type JsonObject = { type?: string; properties?: Record<string, any>; required?: string[] };

/** Query defaults make a parameter optional; query examples are dropped, as the docs UI would send them as filters. */
function documentQuery(querystring: unknown): unknown {
  const schema = querystring as JsonObject | undefined;
  if (!schema?.properties) return querystring;
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([name, property]) => {
      const { examples: _examples, ...rest } = property as Record<string, unknown>;
      return [name, rest];
    }),
  );
  const required = (schema.required ?? []).filter((name) => schema.properties![name]?.default === undefined);
  return { ...schema, properties, required };
}

const LIST_RULES = 'Every query parameter is optional; an unknown one is refused with 400.';
const PROPERTY_RULES =
  'Property filters: propertyPath alone matches records where the key is present (even when null); ' +
  'with propertyValue, the JSON scalar at the path must equal it as text ("456" matches 456 and "456"); ' +
  'with propertyExists=false, the key must be absent. propertyValue and propertyExists cannot be used together, ' +
  'and each requires propertyPath (400 otherwise).';

/** Adds the shared parts (auth, Idempotency-Key, errors, headers) to the document only, and names shapes as components. */
export function openapiOptions(): FastifyDynamicSwaggerOptions {
  const extensions = new Set<string>();
  const etags = new Set<string>();
  const sandboxOnly = new Set<string>();
  const noReplays = new Set<string>();
  const key = (method: string, url: string) => `${method.toLowerCase()} ${url.replace(/:(\w+)/g, '{$1}')}`;
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Supplyline',
        version: '1.0.0',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        description:
          'Supplier-side trading service: items, buyers, price lists, orders and invoices.\n\n' +
          'Every `/api/v1` request carries `X-Business-Id` and `X-API-Key` (use **Authorize** to set both). ' +
          'Bodies are JSON. Errors have `{errorCode, message, error, requestId}`, and validation errors `fieldErrors` keyed by path. ' +
          'Send an `Idempotency-Key` on any POST or PATCH to make it safe to retry. ' +
          "Operations marked `x-supplyline-extension` are Supplyline's own, beyond the integration contract.",
      },
      servers: [{ url: '/', description: 'The server that serves this document' }],
      components: { securitySchemes: SECURITY_SCHEMES as never, headers: HEADERS as never },
      security: [{ BusinessId: [], ApiKey: [] }],
      tags: [
        { name: 'Items', description: 'Items and their variants' },
        { name: 'Buyers', description: 'Phantom buyers, their partnerships and contacts' },
        { name: 'Pricing', description: 'Price lists (item lists), their entries and assignments' },
        { name: 'Orders', description: 'Orders, their items and properties, and the ingestion call' },
        { name: 'Invoices', description: 'Invoices made from orders, and their line items' },
        { name: 'Acknowledgements', description: 'What the supplier accepts of an order, line by line (X12 855)' },
        { name: 'Shipments', description: 'What left the warehouse: packages, lines and tracking (X12 856)' },
        {
          name: 'Events',
          description:
            "The change feed: every change of the business, numbered without gaps; and each resource's history",
        },
        { name: 'Audit', description: 'Who changed keys, users and webhook endpoints, and every refused request' },
        {
          name: 'Sandbox',
          description: 'Sandbox only (test keys, sl_test_): a simulated buyer to build an integration against',
        },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
    transform: ({ schema, url, route }) => {
      if (!url.startsWith('/api/')) return { schema, url };
      const method = String(route.method);
      const config = route.config as
        | { extension?: boolean; etag?: boolean; replays?: boolean; namesOther?: boolean; sandboxOnly?: boolean }
        | undefined;
      if (config?.extension) extensions.add(key(method, url));
      if (config?.sandboxOnly) sandboxOnly.add(key(method, url));
      if (config?.etag) etags.add(key(method, url));
      if (config?.replays === false) noReplays.add(key(method, url));
      const own = (schema.headers as { properties?: Record<string, never> } | undefined)?.properties ?? {};
      const headers = {
        ...(method === 'POST' || method === 'PATCH' ? IDEMPOTENCY_HEADER : {}),
        ...(method === 'GET' ? CONSISTENT_AFTER_HEADER : {}),
        ...own,
      };
      const querystring = documentQuery(schema.querystring);
      const queryNames = Object.keys((querystring as JsonObject | undefined)?.properties ?? {});
      const rules = [
        ...(querystring ? [LIST_RULES] : []),
        ...(queryNames.includes('propertyPath') ? [PROPERTY_RULES] : []),
      ];
      const description = [schema.description, ...rules].filter(Boolean).join('\n\n') || undefined;
      return {
        url,
        schema: {
          ...schema,
          ...(description ? { description } : {}),
          ...(querystring ? { querystring } : {}),
          ...(Object.keys(headers).length > 0 ? { headers: Type.Object(headers) } : { headers: undefined }),
          response: { ...errorResponses(method, url, config?.namesOther === true), ...(schema.response as object) },
        } as typeof schema,
      };
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, any> }).openapiObject;
      for (const [path, operations] of Object.entries(doc.paths ?? {})) {
        for (const [method, operation] of Object.entries(operations as Record<string, any>)) {
          if (extensions.has(`${method} ${path}`)) operation['x-supplyline-extension'] = true;
          if (sandboxOnly.has(`${method} ${path}`)) operation['x-supplyline-sandbox-only'] = true;
          // OpenAPI 3.1 allows scopes (roles) for any scheme.
          const scopes = requiredScopes(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ':$1'));
          const scope = scopes[0];
          if (scope) operation.security = [{ BusinessId: [], ApiKey: scopes }];
          decorateResponses(
            operation,
            method,
            etags.has(`${method} ${path}`),
            !noReplays.has(`${method} ${path}`),
            scope,
          );
        }
      }
      nameComponents(doc);
      return doc;
    },
  };
}

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

function decorateResponses(
  operation: Record<string, any>,
  method: string,
  etag: boolean,
  replays: boolean,
  scope?: string,
) {
  const writes = replays && (method === 'post' || method === 'patch');
  const tag = operation.tags?.[0] as string | undefined;
  for (const [status, response] of Object.entries<Record<string, any>>(operation.responses ?? {})) {
    const code = Number(status);
    response.headers = {
      'X-Request-Id': ref('X-Request-Id'),
      RateLimit: ref('RateLimit'),
      'RateLimit-Policy': ref('RateLimit-Policy'),
      ...(code === 429 || code === 503 ? { 'Retry-After': ref('Retry-After') } : {}),
      ...(etag && code < 300 ? { ETag: ref('ETag') } : {}),
      ...(code < 300 ? { 'Supplyline-Position': ref('Supplyline-Position') } : {}),
      // Stored answers (2xx, and 4xx other than 400) of a POST or PATCH are replayed.
      ...(writes && code !== 400 && code < 500 ? { 'Idempotent-Replayed': ref('Idempotent-Replayed') } : {}),
      ...response.headers,
    };
    const content = response.content?.['application/json'];
    if (code >= 400 && content && content.example === undefined && content.examples === undefined) {
      const example = errorExample(code, method, tag, operation.requestBody, scope);
      if (example) content.example = example;
    }
  }
}

const LOGO =
  `<svg xmlns="http://www.w3.org/2000/svg" width="220" height="40" viewBox="0 0 220 40">` +
  `<text x="0" y="29" font-family="sans-serif" font-size="26" font-weight="700" fill="#ffffff">Supplyline API</text></svg>`;

export function docsUiOptions(): FastifySwaggerUiOptions {
  return {
    routePrefix: '/docs',
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO), href: '/docs', target: '_self' },
    theme: { title: 'Supplyline API' },
    uiConfig: { persistAuthorization: true, displayOperationId: true, docExpansion: 'list', tryItOutEnabled: true },
  };
}

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, openapiOptions());
  await app.register(swaggerUi, docsUiOptions());
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .code(302)
      .header('location', '/docs')
      .send({ name: 'Supplyline', docs: '/docs', openapi: '/openapi.json', health: '/healthz' }),
  );
}
