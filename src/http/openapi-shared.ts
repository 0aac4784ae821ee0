import {
  RATE_LIMITED_MESSAGE,
  SERVICE_UNAVAILABLE_MESSAGE,
  UNAUTHORIZED_HINT,
  VALIDATION_MESSAGE,
} from '../lib/errors.ts';

/** The two credentials headers, as security schemes, so the docs UI has one Authorize dialog. */
export const SECURITY_SCHEMES = {
  BusinessId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Business-Id',
    description:
      'The business (tenant) id, e.g. `bus_1234567890abcdef`; also written X-Business-ID. Header names are case-insensitive.',
  },
  ApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description:
      'A live API key of that business: a secret, never to be put in client-side code. `npm run cli -- business create` prints one. ' +
      'A restricted key holds scopes: each operation names the one it needs (`orders:read`, `items:write`, ...; write includes read), ' +
      "and a key without it is answered 403 FORBIDDEN naming it. Cost fields (`cost`, `globalCostFactor`) are the supplier's margin: " +
      'a key without `margin:read` never sees them (answers, exports, events, replays, and deliveries to webhook endpoints it set up), ' +
      'and one without `margin:write` is answered 403 when it sends one. `audit:read` reads the audit trail. ' +
      'A key made without scopes may do everything.',
  },
};

/** Response headers, referenced from every response of every operation that sends them. */
export const HEADERS = {
  'X-Request-Id': {
    description:
      'Identifies the request; equals the requestId of an error body. A valid incoming X-Request-Id is kept.',
    required: true,
    schema: { type: 'string' },
  },
  RateLimit: {
    description:
      'The business\'s remaining requests and seconds until the bucket is full (IETF draft), e.g. `"burst";r=99;t=1`. ' +
      'Absent when rate limiting is off.',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: 'The bucket size and window (IETF draft), e.g. `"burst";q=100;w=2`. Absent when rate limiting is off.',
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying (at least 1)',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  ETag: {
    description: 'The resource\'s version, `"<version>"`; send it back as If-Match on PATCH to avoid lost updates',
    required: true,
    schema: { type: 'string', examples: ['"3"'] },
  },
  'Supplyline-Position': {
    description:
      'With read replicas (DATABASE_REPLICA_URLS): a point in the database this answer is at least at (a read) or after (a write), ' +
      'e.g. `0/16B3740`. Send it back as Consistent-After to read no older than it.',
    schema: { type: 'string', examples: ['0/16B3740'] },
  },
  'Idempotent-Replayed': {
    description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
};

const REQUEST_ID = 'req_01jd5x8m2k3n4p5q6r7s8t9v0w';
const body = (errorCode: string, message: string, fieldErrors?: Record<string, string>) => ({
  errorCode,
  message,
  error: message,
  requestId: REQUEST_ID,
  ...(fieldErrors ? { fieldErrors } : {}),
});

const NOT_FOUND: Record<string, string> = {
  Orders: 'Order not found',
  Items: 'Item not found',
  Buyers: 'Buyer not found',
  Pricing: 'Price list not found',
  Invoices: 'Invoice not found',
  Acknowledgements: 'Order not found',
  Shipments: 'Shipment not found',
};

/** An example error body for a status: what this operation really answers, never a validation error on a 404. */
export function errorExample(
  status: number,
  method: string,
  tag: string | undefined,
  requestBody: any,
  scope?: string,
): Record<string, unknown> | null {
  switch (status) {
    case 400: {
      const required: string[] = requestBody?.content?.['application/json']?.schema?.required ?? [];
      const fieldErrors: Record<string, string> =
        method === 'get'
          ? { limit: 'Must be <= 100' }
          : required.length > 0
            ? { [required[0]]: 'Required' }
            : { colour: 'Unrecognized key' };
      return body('VALIDATION_ERROR', VALIDATION_MESSAGE, fieldErrors);
    }
    case 401:
      return { ...body('UNAUTHORIZED', 'Unauthorized'), hint: UNAUTHORIZED_HINT };
    case 403:
      return body(
        'FORBIDDEN',
        scope ? `This API key lacks the scope ${scope}` : 'This API key lacks the scope this operation needs',
      );
    case 404:
      return body('NOT_FOUND', NOT_FOUND[tag ?? ''] ?? 'Not found');
    case 409:
      // A read's 409: the feed's `after` past the latest event.
      if (method === 'get')
        return body(
          'CONFLICT',
          "after is 4515, past this business's latest event, 3515: " +
            'a sequence of another business or sandbox, or of a database since restored',
        );
      return body('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed');
    case 410:
      return body('GONE', 'Events up to 1200 are no longer retained; the oldest is 1201');
    case 412:
      return body(
        'PRECONDITION_FAILED',
        `The ${tag === 'Invoices' ? 'invoice' : tag === 'Shipments' ? 'shipment' : 'order'} has changed: its current version is 4`,
      );
    case 413:
      return body('PAYLOAD_TOO_LARGE', 'Request body is larger than 1048576 bytes');
    case 415:
      return body('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 422:
      return body('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
    case 429:
      return body('RATE_LIMITED', RATE_LIMITED_MESSAGE);
    case 500:
      return body('INTERNAL_ERROR', 'Internal server error');
    case 503:
      return body('SERVICE_UNAVAILABLE', SERVICE_UNAVAILABLE_MESSAGE);
    default:
      return null;
  }
}
