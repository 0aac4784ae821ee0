import { Type, type TSchema } from 'typebox';
import { ID_PATTERN } from '../lib/ids.ts';
import { ERROR_STATUS } from '../lib/errors.ts';
import { MONEY_SCALE } from '../lib/money.ts';

/** Shared schema pieces; field documentation lives in descriptions and examples. */

export const CURRENCIES = [
  'USD',
  'EUR',
  'GBP',
  'CAD',
  'AUD',
  'NZD',
  'CHF',
  'JPY',
  'CNY',
  'INR',
  'BRL',
  'MXN',
  'ARS',
  'COP',
  'PHP',
] as const;
export const Currency = Type.Enum([...CURRENCIES], {
  title: 'Currency',
  description: 'ISO 4217 currency code (contract 2.3)',
  examples: ['AUD'],
});

export const Id = (description: string, example: string) =>
  Type.String({ pattern: ID_PATTERN, maxLength: 64, description, examples: [example] });

export const DateTime = (description: string) =>
  Type.String({
    format: 'date-time',
    description: `${description} (RFC 3339)`,
    examples: ['2025-01-15T10:30:00.000Z'],
  });

/** Said of every cost field: present only for keys with margin:read (src/businesses/margin.ts). */
export const MARGIN_NOTE = "The supplier's margin: left out of answers to a key without the margin:read scope";

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A free-form JSON object: bounded size and depth, no `__proto__`, `constructor` or `prototype` keys. */
export const Properties = Type.Record(Type.String(), Type.Unknown(), {
  title: 'Properties',
  'x-properties': true,
  description:
    'Free-form JSON object, namespaced by system key; deep-merged on PATCH. At most 64 KiB and 32 levels deep.',
  examples: [{ sage200Evo: { salesOrderNo: 456 } }],
});

export const Text = (maxLength: number, description: string, minLength = 0) =>
  Type.String({ minLength, maxLength, description });

/** Decimals bounded in digits (15 together), so the JSON double carries exactly what the client wrote (docs/decisions/). */
export const Decimal = (
  description: string,
  integerDigits: number,
  scale: number,
  options: { exclusiveMinimum?: number; maximum?: number; examples?: number[] } = {},
) =>
  Type.Number({
    ...(options.exclusiveMinimum === undefined ? { minimum: 0 } : { exclusiveMinimum: options.exclusiveMinimum }),
    maximum: options.maximum ?? Number(`${'9'.repeat(integerDigits)}.${'9'.repeat(scale)}`),
    'x-decimal': { integerDigits, scale },
    description: `${description}. At most ${integerDigits} digits before the decimal point and ${scale} after it.`,
    ...(options.examples ? { examples: options.examples } : {}),
  });

export const Money = (description: string) => Decimal(description, 9, MONEY_SCALE, { examples: [12.5] });

export const IdParams = Type.Object({ id: Id('Resource id', 'itm_01jd5x8m2k3n4p5q6r7s8t9v0w') });

/** Any query parameter is refused. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

export const SuccessResponse = Type.Object({ success: Type.Literal(true) }, { title: 'Success' });

/** Defaults make page and limit optional in the document. */
export const PageQuery = {
  page: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 1,
    description: 'Page number, from 1. Not with cursor, which carries its page',
  }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100' }),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        "Continues a list from a page's nextCursor: the next page holds the records after that page's last one, so a walk " +
        'yields every record that stays in the list exactly once, whatever is created, changed or deleted meanwhile. Send it with the ' +
        'same filters (limit may change); a cursor of another list, business or filters, or an altered one, is refused (400)',
    }),
  ),
};

export const IncludeDeletedQuery = {
  includeDeleted: Type.Boolean({
    default: false,
    description: 'Include soft-deleted records, so that a mirror can see deletions (extension)',
  }),
};

export const PropertyFilterQuery = {
  propertyPath: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'Dot path into properties, e.g. sage200Evo.salesOrderNo',
    examples: ['sage200Evo.salesOrderNo'],
  }),
  propertyValue: Type.String({
    maxLength: 1024,
    description: 'Matches the JSON scalar at propertyPath as text: "456" matches 456 and "456"',
  }),
  propertyExists: Type.Boolean({ description: 'true: the key is present (even when null); false: it is absent' }),
};

export const NextCursor = Type.Union([Type.String(), Type.Null()], {
  description:
    'Pass it as cursor, with the same filters, for the next page; null when this page ends the list. Opaque: do not parse it',
});

/** `title` names the page in the document (e.g. OrderPage). */
export const ListEnvelope = <T extends TSchema>(item: T, title: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({ minimum: 0, description: 'Number of matching records across all pages' }),
      page: Type.Integer({ minimum: 1 }),
      pageSize: Type.Integer({ minimum: 1, description: 'The limit used for this page' }),
      nextCursor: NextCursor,
    },
    { title },
  );

export const ErrorResponse = Type.Object(
  {
    errorCode: Type.String({
      description: `One of ${Object.keys(ERROR_STATUS).join(', ')}; more may be added`,
      examples: ['NOT_FOUND'],
    }),
    message: Type.String({ description: 'What went wrong, for people' }),
    error: Type.String({ description: 'Same text as message, for clients that read the single-field shape' }),
    requestId: Type.String({ description: 'Quote it to support; also the X-Request-Id header' }),
    fieldErrors: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'Validation errors keyed by path, e.g. order.phase or variants.0.price',
      }),
    ),
    hint: Type.Optional(
      Type.String({ description: 'What to do about it, on some errors (401 names the headers to send)' }),
    ),
  },
  { $id: 'ErrorResponse', description: 'The error body of every 4xx and 5xx answer' },
);
