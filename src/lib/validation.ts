import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { checkProperties } from './json.ts';
import { badRequest, validationError, type ApiError, type FieldErrors } from './errors.ts';
import { NOTHING_TO_UPDATE } from './patch.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const MAX_FIELD_ERRORS = 50;

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  // verbose: a failed `oneOf` names its alternatives from the schema (see messageFor).
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    strict: false,
    verbose: true,
  });
  addFormats(ajv);
  const dateTime = ajv.formats['date-time'] as { validate: (s: string) => boolean } | ((s: string) => boolean);
  const checkDateTime = typeof dateTime === 'function' ? dateTime : dateTime.validate;
  ajv.addFormat('date-time', (value: string) => checkDateTime(value) && isStorableInstant(value));
  ajv.addKeyword({
    keyword: 'x-decimal',
    type: 'number',
    schemaType: 'object',
    errors: true,
    validate: function check(
      bounds: DecimalBounds,
      data: number,
      _parent?: unknown,
      context?: { instancePath: string },
    ): boolean {
      const ok = fitsDecimal(data, bounds);
      (check as unknown as ValidateFunction).errors = ok
        ? []
        : [
            {
              keyword: 'x-decimal',
              params: {},
              instancePath: context?.instancePath ?? '',
              schemaPath: '',
              message: `Must have at most ${bounds.integerDigits} digits before the decimal point and ${bounds.scale} after it`,
            },
          ];
      return ok;
    },
  });
  // `x-properties: true` marks a free-form JSON object bounded in size, depth and key names.
  ajv.addKeyword({
    keyword: 'x-properties',
    schemaType: 'boolean',
    errors: true,
    validate: function check(
      enabled: boolean,
      data: unknown,
      _parent?: unknown,
      context?: { instancePath: string },
    ): boolean {
      const problem = enabled ? checkProperties(data) : null;
      (check as ValidateFunction).errors = problem
        ? [
            {
              keyword: 'x-properties',
              message: problem,
              params: {},
              instancePath: context?.instancePath ?? '',
              schemaPath: '',
            },
          ]
        : [];
      return problem === null;
    },
  });
  return ajv;
}

/** Date-times outside the years 0001-9999 in UTC, or with a leap second, cannot be stored: refused here. */
export function isStorableInstant(value: string): boolean {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return false;
  const year = new Date(ms).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

export interface DecimalBounds {
  integerDigits: number;
  scale: number;
}

/** A JSON number is a double, exact to 15 digits: bounded decimals reach the arithmetic as the client wrote them. */
export function fitsDecimal(value: number, bounds: DecimalBounds): boolean {
  if (!Number.isFinite(value)) return false;
  const text = String(Math.abs(value));
  if (text.includes('e')) return value === 0;
  const [whole, fraction = ''] = text.split('.');
  return (whole === '0' ? 0 : whole.length) <= bounds.integerDigits && fraction.length <= bounds.scale;
}

// Bodies are JSON and keep their types; query strings, params and headers are text and are coerced.
const bodyAjv = makeAjv(false);
const textAjv = makeAjv('array');

/**
 * A validator compiled when first used: a program that never validates (the CLI) does not pay for
 * it, nor does a process for the routes it never serves (a test file's app serves a few of 150).
 */
function whenUsed(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}

/** A body validator outside a route (an import's lines): the route's checks, defaults and errors. */
export function compileBody(schema: object): ValidateFunction {
  return whenUsed(() => bodyAjv.compile(schema));
}

export function bodyError(errors: ErrorObject[], body: unknown): ApiError {
  // An update body without a single field (minProperties: 1).
  if (errors.some((e) => e.keyword === 'minProperties' && !e.instancePath)) return badRequest(NOTHING_TO_UPDATE);
  return validationError(toFieldErrors(errors, body));
}

/** Compiled validators by part and schema: each app of a process (a test process makes one per suite) shares them. */
const validators = new Map<string, ValidateFunction>();

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const body = httpPart === 'body';
  const key = `${body}${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = body
      ? whenUsed(() => bodyAjv.compile(schema as object))
      : withPlainIntegers(
          schema as TextSchema,
          whenUsed(() => textAjv.compile(schema as object)),
        );
    validators.set(key, validate);
  }
  return validate as ReturnType<FastifySchemaCompiler<unknown>>;
};

type TextSchema = { properties?: Record<string, { type?: unknown }> };

const PLAIN_INTEGER = /^-?[0-9]+$/;

/** Coercion would take `0x14`, `1e1` or `+1` as integers: plain decimal digits only, checked first. */
function withPlainIntegers(schema: TextSchema, validate: ValidateFunction): ValidateFunction {
  const integers = Object.entries(schema.properties ?? {})
    .filter(([, p]) => p.type === 'integer')
    .map(([name]) => name);
  if (integers.length === 0) return validate;
  const check = ((data: unknown) => {
    const values = (data ?? {}) as Record<string, unknown>;
    for (const name of integers) {
      const value = values[name];
      const texts = Array.isArray(value) ? value : [value];
      const bad = texts.find((t) => typeof t === 'string' && !PLAIN_INTEGER.test(t));
      if (bad !== undefined) {
        check.errors = [
          {
            keyword: 'type',
            params: { type: 'integer' },
            instancePath: `/${name}`,
            schemaPath: `#/properties/${name}/type`,
            message: 'must be integer',
          },
        ];
        return false;
      }
    }
    const ok = validate(data);
    check.errors = validate.errors;
    return ok;
  }) as ValidateFunction;
  return check;
}

function valueAt(root: unknown, pointer: string): unknown {
  let node = root;
  for (const raw of pointer.split('/').slice(1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return `'${value.length > 100 ? `${value.slice(0, 100)}…` : value}'`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'array' : 'object';
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function messageFor(error: ErrorObject, data: unknown): string {
  const value = valueAt(data, error.instancePath);
  switch (error.keyword) {
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
      return `Invalid enum value. Expected ${allowed.map((v) => `'${v}'`).join(' | ')}, received ${describe(value)}`;
    }
    case 'required':
      return 'Required';
    case 'additionalProperties':
      return 'Unrecognized key';
    case 'type': {
      const expected = (error.params as { type: string }).type;
      // Query-string values are always text; name the text rather than its type.
      return typeof value === 'string' && expected !== 'string'
        ? `Expected ${expected}, received ${describe(value)}`
        : `Expected ${expected}, received ${typeName(value)}`;
    }
    case 'format':
      return `Invalid ${(error.params as { format: string }).format}`;
    case 'anyOf':
      return 'Invalid value';
    case 'oneOf': {
      // `oneOf: [{required: [a]}, {required: [b]}]` is how a schema says "exactly one of a and b".
      const names = ((error.schema as Array<{ required?: string[] }>) ?? []).flatMap((branch) => branch.required ?? []);
      return names.length > 0 ? `Give exactly one of ${names.join(' and ')}` : 'Must match exactly one alternative';
    }
    default:
      return (error.message ?? 'Invalid value').replace(/^must /, 'Must ');
  }
}

function pathFor(error: ErrorObject): string {
  const parts = error.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  if (error.keyword === 'required' && params.missingProperty) parts.push(params.missingProperty);
  if (error.keyword === 'additionalProperties' && params.additionalProperty) parts.push(params.additionalProperty);
  return parts.join('.') || '(root)';
}

/** Turns Ajv's errors into `fieldErrors` keyed by dotted path, one message per path. */
export function toFieldErrors(errors: ErrorObject[], data: unknown): FieldErrors {
  const out: FieldErrors = {};
  // A failing `anyOf` (nullable fields) reports each branch; the most specific branch error wins.
  const rank = (e: ErrorObject) =>
    e.keyword === 'anyOf' ? 2 : e.keyword === 'type' && (e.params as { type?: string }).type === 'null' ? 1 : 0;
  const ordered = [...errors].sort((a, b) => rank(a) - rank(b));
  for (const error of ordered) {
    // A oneOf branch's own failures are reported once, by the oneOf error itself.
    if (error.schemaPath.includes('/oneOf/')) continue;
    const path = pathFor(error);
    if (path in out) continue;
    // A nullable object's own errors are named within it: that it is not null says nothing more.
    if (rank(error) > 0 && Object.keys(out).some((field) => path === '(root)' || field.startsWith(`${path}.`)))
      continue;
    if (Object.keys(out).length >= MAX_FIELD_ERRORS) break;
    out[path] = messageFor(error, data);
  }
  return out;
}
