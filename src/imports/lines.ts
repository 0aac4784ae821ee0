import { Type } from 'typebox';
import { bodyError, compileBody } from '../lib/validation.ts';
import { ApiError, validationError } from '../lib/errors.ts';
import { parseJsonText, unstorableTextError } from '../http/json-body.ts';

/**
 * One line of an import file: its envelope, and its `data` (the body the single-record operation
 * takes; src/imports/operations.ts checks and applies it as that operation would). A line may
 * name an earlier line's record by that line's `ref`: `{"$ref": "tea"}` for its id,
 * `{"$ref": "tea", "variant": 0}` for an item line's first variant.
 */
export const RESOURCES = ['item', 'buyer', 'price_list', 'order', 'invoice', 'acknowledgement', 'shipment'] as const;
export type ResourceName = (typeof RESOURCES)[number];
export const OPS = ['create', 'patch', 'upsert'] as const;

/** The longest line taken; a longer one is a failed line, not a failed import. */
export const MAX_LINE_BYTES = 1024 * 1024;
const MAX_REF_LENGTH = 200;
const MAX_DEPTH = 64;
/** `handle`, or `properties.` and a dot path as list filters take it (PROPERTY_SEGMENT in src/db/dialect-json.ts). */
const MATCH_PATTERN = '^(handle|properties(\\.[A-Za-z0-9_$-]{1,64}){1,16})$';

const Reference = Type.Union([
  Type.String({ minLength: 1, maxLength: MAX_REF_LENGTH }),
  Type.Object({ $ref: Type.String({ minLength: 1, maxLength: MAX_REF_LENGTH }) }, { additionalProperties: false }),
]);

export const ImportLine = Type.Object(
  {
    op: Type.Enum([...OPS], { description: 'create, patch, or upsert (create unless a record matches `match`)' }),
    resource: Type.Enum([...RESOURCES]),
    ref: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_REF_LENGTH,
        description: "The caller's key for this line, unique in the file",
      }),
    ),
    id: Type.Optional(Reference),
    buyerId: Type.Optional(Reference),
    orderId: Type.Optional(Reference),
    data: Type.Object({}, { additionalProperties: true }),
    match: Type.Optional(
      Type.String({
        maxLength: 1100,
        pattern: MATCH_PATTERN,
        description:
          'upsert: the key a record is found by, read from `data`: `handle` (items) or `properties.<dot path>`',
      }),
    ),
    patch: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, description: 'upsert: the patch body applied when a record matches' },
      ),
    ),
  },
  { additionalProperties: false },
);

const checkLine = compileBody(ImportLine);

/** A line as read, its references not yet resolved. */
export interface ParsedLine {
  op: 'create' | 'patch' | 'upsert';
  resource: ResourceName;
  ref: string | null;
  id?: string;
  buyerId?: string;
  /** The order an acknowledgement or a shipment is of (the single call's path names it). */
  orderId?: string;
  data: Record<string, unknown>;
  match?: string;
  patch?: Record<string, unknown>;
}

/** An earlier line's result, as a reference to it needs it. */
export interface Referenced {
  line: number;
  outcome: string;
  recordId: string | null;
  variantIds?: string[];
  /** A dry run's item create: the variants it would have made. */
  variants?: number;
}

const NOT_JSON = 'The line is not valid JSON';

/** Reads a line's text: a failed line's error when it is not a line of the format. */
export function parseLine(text: string): ParsedLine {
  if (text.startsWith(TOO_LONG)) throw validationError({ '(root)': `The line is longer than ${MAX_LINE_BYTES} bytes` });
  if (text.startsWith(NOT_UTF8)) throw validationError({ '(root)': 'The line is not valid UTF-8' });
  // No JSON text begins with a NUL.
  if (text.startsWith(STARTS_WITH_NUL)) throw validationError({ '(root)': NOT_JSON });
  let value: unknown;
  try {
    // As the single call's body: a byte order mark before it skipped, `__proto__` keys refused.
    value = parseJsonText(text);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw validationError({ '(root)': NOT_JSON });
  }
  // As the single call's body is (src/http/json-body.ts): PostgreSQL cannot hold a NUL, and would store a lone surrogate as U+FFFD.
  const refused = unstorableTextError(text, value, 'data');
  if (refused !== null) throw refused;
  if (!checkLine(value)) throw bodyError(checkLine.errors ?? [], value);
  return value as ParsedLine;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The ref of a line `parseLine` refused, where its text is a JSON object with a ref the results can
 * hold (no NUL, no lone surrogate, within the length): the caller matches its failure by it. Else null.
 */
export function refOf(text: string): string | null {
  if (text.startsWith('\u0000')) return null;
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return null;
  }
  const ref = typeof value === 'object' && value !== null ? (value as { ref?: unknown }).ref : undefined;
  return typeof ref === 'string' &&
    ref.length >= 1 &&
    ref.length <= MAX_REF_LENGTH &&
    !ref.includes('\u0000') &&
    !LONE_SURROGATE.test(ref)
    ? ref
    : null;
}

/** Stands in, in a dry run, for a record an earlier line would have made: shaped as an id, so the line's schema still checks. */
const UNRESOLVED = 'dry_run_record';

/** Stands in for a line longer than MAX_LINE_BYTES in the stored file: no JSON text starts with a NUL. */
export const TOO_LONG = '\u0000too long';
/** Stands in for a line whose bytes are not UTF-8. */
export const NOT_UTF8 = '\u0000not utf-8';
/** Stands in for a line that begins with a NUL, which would otherwise read as one of these stand-ins. */
export const STARTS_WITH_NUL = '\u0000nul';

/**
 * Replaces every reference in the line (`id`, `buyerId`, `orderId`, and `{"$ref": ...}` objects anywhere in
 * `data`) with the id it names. `find` reads an earlier line's result by its ref; a reference to an
 * unknown ref, a failed line, or a variant the item does not have is the line's error.
 */
export async function resolveReferences(
  line: ParsedLine,
  find: (ref: string) => Promise<Referenced | undefined>,
): Promise<{ line: ParsedLine; unresolved: number[] }> {
  const errors: Record<string, string> = {};
  /** The earlier lines of a dry run whose records the line names: a dry run makes none. */
  const unresolved = new Set<number>();
  const noVariant = (line: number, ref: string, index: unknown) =>
    `Line ${line} (ref '${ref}') has no variant ${JSON.stringify(index)}`;
  const resolve = async (reference: { $ref: string; variant?: unknown }, path: string): Promise<string | undefined> => {
    const target = await find(reference.$ref);
    if (!target) {
      errors[path] = `No earlier line has the ref '${reference.$ref}'`;
      return undefined;
    }
    if (target.outcome === 'failed') {
      errors[path] = `Line ${target.line} (ref '${reference.$ref}') failed`;
      return undefined;
    }
    const index = reference.variant;
    const isIndex = typeof index === 'number' && Number.isInteger(index) && index >= 0;
    if (target.recordId === null) {
      // Its variants are counted, though not made: an index beyond them fails as it would.
      if (index !== undefined && target.variants !== undefined && !(isIndex && index < target.variants)) {
        errors[path] = noVariant(target.line, reference.$ref, index);
        return undefined;
      }
      unresolved.add(target.line);
      return UNRESOLVED;
    }
    if (index === undefined) return target.recordId;
    const id = isIndex ? target.variantIds?.[index] : undefined;
    if (id === undefined) errors[path] = noVariant(target.line, reference.$ref, index);
    return id;
  };
  const isReference = (value: unknown): value is { $ref: string; variant?: unknown } => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const keys = Object.keys(value);
    return typeof (value as { $ref?: unknown }).$ref === 'string' && keys.every((k) => k === '$ref' || k === 'variant');
  };
  const walk = async (value: unknown, path: string, depth: number): Promise<unknown> => {
    if (depth > MAX_DEPTH) {
      errors[path] = `Nested deeper than ${MAX_DEPTH} levels`;
      return value;
    }
    if (isReference(value)) return resolve(value, path);
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++)
        out.push(await walk(value[i], path ? `${path}.${i}` : String(i), depth + 1));
      return out;
    }
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = await walk(v, path ? `${path}.${k}` : k, depth + 1);
      return out;
    }
    return value;
  };
  const top = async (value: unknown, name: string) =>
    typeof value === 'string'
      ? value
      : value === undefined
        ? undefined
        : ((await walk(value, name, 0)) as string | undefined);
  const resolved: ParsedLine = {
    ...line,
    id: await top(line.id, 'id'),
    buyerId: await top(line.buyerId, 'buyerId'),
    orderId: await top(line.orderId, 'orderId'),
    data: (await walk(line.data, '', 0)) as Record<string, unknown>,
    ...(line.patch === undefined ? {} : { patch: (await walk(line.patch, 'patch', 0)) as Record<string, unknown> }),
  };
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return { line: resolved, unresolved: [...unresolved].sort((a, b) => a - b) };
}

/** An error as a line's result shows it: the single call's error body, without a request id. */
export function lineError(error: ApiError): {
  errorCode: string;
  message: string;
  fieldErrors?: Record<string, string>;
} {
  return {
    errorCode: error.code,
    message: error.message,
    ...(error.fieldErrors ? { fieldErrors: error.fieldErrors } : {}),
  };
}
