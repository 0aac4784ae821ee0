import { Type } from 'typebox';
import type { ValidateFunction } from 'ajv';
import { allows, type Area, type Scope } from '../businesses/scopes.ts';
import { marginFieldIn } from '../businesses/margin.ts';
import { findBuyerPartnership } from '../buyers/repository.ts';
import { CreateBuyerBody, UpdateBuyerBody } from '../buyers/schema.ts';
import { BUYER_NOT_FOUND, createBuyer, patchBuyer } from '../buyers/service.ts';
import { bodyError, compileBody } from '../http/validation.ts';
import { CreateInvoiceBody, UpdateInvoiceBody } from '../invoices/schema.ts';
import { createInvoice, patchInvoice } from '../invoices/service.ts';
import { CreateItemBody, UpdateItemBody } from '../items/schema.ts';
import { createItem, patchItem } from '../items/service.ts';
import { ApiError, forbidden, notFound, validationError } from '../lib/errors.ts';
import { CreateOrderBody, UpdateOrderBody } from '../orders/schema.ts';
import { createOrder } from '../orders/service.ts';
import { patchOrder } from '../orders/patch-service.ts';
import { CreatePriceListBody } from '../pricing/schema.ts';
import { createPriceList } from '../pricing/service.ts';
import type { WriteContext } from '../write/runner.ts';

/**
 * One line of an import file, and what applying it means: the body the single-record operation
 * takes (`data`), checked by the same schema, applied by the same service, refused with the same
 * errors. A line may name an earlier line's record by that line's `ref`: `{"$ref": "tea"}` for its
 * id, `{"$ref": "tea", "variant": 0}` for an item line's first variant.
 */
export const RESOURCES = ['item', 'buyer', 'price_list', 'order', 'invoice'] as const;
export type ResourceName = (typeof RESOURCES)[number];
export const OPS = ['create', 'patch'] as const;

/** The longest line taken; a longer one is a failed line, not a failed import. */
export const MAX_LINE_BYTES = 1024 * 1024;
const MAX_REF_LENGTH = 200;
const MAX_DEPTH = 64;

const Reference = Type.Union([
  Type.String({ minLength: 1, maxLength: 200 }),
  Type.Object({ $ref: Type.String({ minLength: 1, maxLength: MAX_REF_LENGTH }) }, { additionalProperties: false }),
]);

export const ImportLine = Type.Object({
  op: Type.Union(OPS.map((op) => Type.Literal(op)), { description: 'create or patch' }),
  resource: Type.Union(RESOURCES.map((r) => Type.Literal(r))),
  ref: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_REF_LENGTH, description: 'The caller\'s key for this line, unique in the file' })),
  id: Type.Optional(Reference),
  buyerId: Type.Optional(Reference),
  data: Type.Object({}, { additionalProperties: true }),
}, { additionalProperties: false });

const checkLine = compileBody(ImportLine);

/** What a line did, as its result reports it. */
export interface Applied {
  outcome: 'created' | 'updated' | 'unchanged';
  id: string;
  variantIds?: string[];
}

interface Operation {
  area: Area;
  create?: { check: ValidateFunction; apply(ctx: WriteContext, data: any, line: ParsedLine): Promise<Applied> };
  patch?: { check: ValidateFunction; apply(ctx: WriteContext, id: string, data: any): Promise<Applied> };
}

/** A patch's result; one that changed nothing discards its write (src/write/update.ts), and the worker reports it unchanged. */
const patched = (written: { resource: { id: string } }): Applied => ({ outcome: 'updated', id: written.resource.id });

const OPERATIONS: Record<ResourceName, Operation> = {
  item: {
    area: 'items',
    create: {
      check: compileBody(CreateItemBody),
      apply: async (ctx, data) => {
        const { resource, variantIds } = await createItem(ctx, data);
        return { outcome: 'created', id: resource.id, variantIds };
      },
    },
    patch: {
      check: compileBody(UpdateItemBody),
      apply: async (ctx, id, data) => {
        const written = await patchItem(ctx, id, data);
        return { ...patched(written), variantIds: written.resource.variants.map((v) => v.id) };
      },
    },
  },
  buyer: {
    area: 'buyers',
    create: { check: compileBody(CreateBuyerBody), apply: async (ctx, data) => ({ outcome: 'created', id: (await createBuyer(ctx, data)).resource.id }) },
    patch: { check: compileBody(UpdateBuyerBody), apply: async (ctx, id, data) => patched(await patchBuyer(ctx, id, data)) },
  },
  price_list: {
    area: 'pricing',
    create: { check: compileBody(CreatePriceListBody), apply: async (ctx, data) => ({ outcome: 'created', id: (await createPriceList(ctx, data)).resource.id }) },
  },
  order: {
    area: 'orders',
    create: {
      check: compileBody(CreateOrderBody),
      apply: async (ctx, data, line) => {
        if (line.buyerId === undefined) throw validationError({ buyerId: 'Required: the buyer the order is for' });
        const partnership = await findBuyerPartnership(ctx.trx, ctx.businessId, line.buyerId);
        if (!partnership) throw notFound(BUYER_NOT_FOUND);
        return { outcome: 'created', id: (await createOrder(ctx, partnership, data)).resource.id };
      },
    },
    patch: { check: compileBody(UpdateOrderBody), apply: async (ctx, id, data) => patched(await patchOrder(ctx, id, data, undefined)) },
  },
  invoice: {
    area: 'invoices',
    create: { check: compileBody(CreateInvoiceBody), apply: async (ctx, data) => ({ outcome: 'created', id: (await createInvoice(ctx, data)).resource.id }) },
    patch: { check: compileBody(UpdateInvoiceBody), apply: async (ctx, id, data) => patched(await patchInvoice(ctx, id, data, undefined)) },
  },
};

/** A line as read, its references not yet resolved. */
export interface ParsedLine {
  op: 'create' | 'patch';
  resource: ResourceName;
  ref: string | null;
  id?: string;
  buyerId?: string;
  data: Record<string, unknown>;
}

/** An earlier line's result, as a reference to it needs it. */
export interface Referenced {
  line: number;
  outcome: string;
  recordId: string | null;
  variantIds?: string[];
}

/** Reads a line's text: a failed line's error when it is not a line of the format. */
export function parseLine(text: string): ParsedLine {
  if (text.startsWith(TOO_LONG)) throw validationError({ '(root)': `The line is longer than ${MAX_LINE_BYTES} bytes` });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw validationError({ '(root)': 'The line is not valid JSON' });
  }
  if (!checkLine(value)) throw bodyError(checkLine.errors ?? [], value);
  return value as ParsedLine;
}

/** Stands in, in a dry run, for a record an earlier line would have made: shaped as an id, so the line's schema still checks. */
const UNRESOLVED = 'dry_run_record';

/** Stands in for a line longer than MAX_LINE_BYTES in the stored file: no JSON text starts with a NUL. */
export const TOO_LONG = '\u0000too long';

/**
 * Replaces every reference in the line (`id`, `buyerId`, and `{"$ref": ...}` objects anywhere in
 * `data`) with the id it names. `find` reads an earlier line's result by its ref; a reference to an
 * unknown ref, a failed line, or a variant the item does not have is the line's error.
 */
export async function resolveReferences(
  line: ParsedLine, find: (ref: string) => Promise<Referenced | undefined>,
): Promise<{ line: ParsedLine; unresolved: boolean }> {
  const errors: Record<string, string> = {};
  let unresolved = false;
  const resolve = async (reference: { $ref: string; variant?: unknown }, path: string): Promise<string | undefined> => {
    const target = await find(reference.$ref);
    if (!target) { errors[path] = `No earlier line has the ref '${reference.$ref}'`; return undefined; }
    if (target.outcome === 'failed') { errors[path] = `Line ${target.line} (ref '${reference.$ref}') failed`; return undefined; }
    if (target.recordId === null) { unresolved = true; return UNRESOLVED; }
    if (reference.variant === undefined) return target.recordId;
    const index = reference.variant;
    const id = typeof index === 'number' && Number.isInteger(index) ? target.variantIds?.[index] : undefined;
    if (id === undefined) errors[path] = `Line ${target.line} (ref '${reference.$ref}') has no variant ${JSON.stringify(index)}`;
    return id;
  };
  const isReference = (value: unknown): value is { $ref: string; variant?: unknown } => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const keys = Object.keys(value);
    return typeof (value as { $ref?: unknown }).$ref === 'string' && keys.every((k) => k === '$ref' || k === 'variant');
  };
  const walk = async (value: unknown, path: string, depth: number): Promise<unknown> => {
    if (depth > MAX_DEPTH) { errors[path] = `Nested deeper than ${MAX_DEPTH} levels`; return value; }
    if (isReference(value)) return resolve(value, path);
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++) out.push(await walk(value[i], path ? `${path}.${i}` : String(i), depth + 1));
      return out;
    }
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = await walk(v, path ? `${path}.${k}` : k, depth + 1);
      return out;
    }
    return value;
  };
  const top = async (value: unknown, name: string) => (typeof value === 'string' ? value : value === undefined ? undefined : await walk(value, name, 0) as string | undefined);
  const resolved: ParsedLine = {
    ...line,
    id: await top(line.id, 'id'),
    buyerId: await top(line.buyerId, 'buyerId'),
    data: await walk(line.data, '', 0) as Record<string, unknown>,
  };
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return { line: resolved, unresolved };
}

/**
 * Checks a resolved line against what its key may do and what its operation takes: the same
 * scopes as the single call (`items:write` for an item line; `margin:write` to send cost fields),
 * and the same body schema, whose defaults it fills in.
 */
export function checkOperation(line: ParsedLine, scopes: Scope[] | null): Operation['create'] | Operation['patch'] {
  const operation = OPERATIONS[line.resource];
  const needed: Scope = `${operation.area}:write`;
  if (!allows(scopes, needed)) throw forbidden(`This API key lacks the scope ${needed}`);
  const field = allows(scopes, 'margin:write') ? undefined : marginFieldIn(line.data);
  if (field) throw forbidden(`This API key lacks the scope margin:write (it sent ${field})`);
  const step = operation[line.op];
  if (!step) throw validationError({ op: `A ${line.resource} line takes op ${Object.keys(operation).filter((k) => k !== 'area').join(' or ')}` });
  if (line.op === 'patch' && line.id === undefined) throw validationError({ id: 'Required: the record to patch' });
  if (!step.check(line.data)) throw bodyError(step.check.errors ?? [], line.data);
  return step;
}

/** Applies a checked line in the write's transaction. */
export function applyLine(ctx: WriteContext, line: ParsedLine): Promise<Applied> {
  const operation = OPERATIONS[line.resource];
  if (line.op === 'create') return operation.create!.apply(ctx, line.data, line);
  return operation.patch!.apply(ctx, line.id!, line.data);
}

/** An error as a line's result shows it: the single call's error body, without a request id. */
export function lineError(error: ApiError): { errorCode: string; message: string; fieldErrors?: Record<string, string> } {
  return { errorCode: error.code, message: error.message, ...(error.fieldErrors ? { fieldErrors: error.fieldErrors } : {}) };
}
