import type { ValidateFunction } from 'ajv';
import { allows, type Area, type Scope } from '../businesses/scopes.ts';
import { marginFieldIn } from '../businesses/margin.ts';
import { findBuyerPartnerships, listBuyers } from '../buyers/repository.ts';
import { CreateBuyerBody, UpdateBuyerBody } from '../buyers/schema.ts';
import { BUYER_NOT_FOUND, createBuyer, patchBuyer } from '../buyers/service.ts';
import { bodyError, compileBody } from '../lib/validation.ts';
import { CreateInvoiceBody, UpdateInvoiceBody } from '../invoices/schema.ts';
import { createInvoice, patchInvoice } from '../invoices/service.ts';
import { listInvoices } from '../invoices/list-repository.ts';
import { CreateItemBody, UpdateItemBody, type CreateItemInput } from '../items/schema.ts';
import { createItem, createItems, patchItem } from '../items/service.ts';
import { findItem, listItems } from '../items/repository.ts';
import { findItemIdByHandle } from '../items/handles.ts';
import { ApiError, conflict, forbidden, notFound, validationError } from '../lib/errors.ts';
import { CreateOrderBody, UpdateOrderBody, type CreateOrderInput } from '../orders/schema.ts';
import { createOrder, createOrders, type Partnership } from '../orders/service.ts';
import { listOrders } from '../orders/read-model/index.ts';
import { patchOrder } from '../orders/patch-service.ts';
import { CreatePriceListBody } from '../pricing/schema.ts';
import { CreateAcknowledgementBody } from '../fulfilment/acknowledgement-schema.ts';
import { acknowledgeOrder } from '../fulfilment/acknowledgement-service.ts';
import { listShipments } from '../fulfilment/shipment-repository.ts';
import { CreateShipmentBody, UpdateShipmentBody } from '../fulfilment/shipment-schema.ts';
import { createShipment, patchShipment } from '../fulfilment/shipment-service.ts';
import { createPriceList } from '../pricing/service.ts';
import type { WriteContext } from '../write/runner.ts';
import type { Db } from '../db/types.ts';
import type { PropertyFilter } from '../db/list.ts';
import type { ParsedLine, ResourceName } from './lines.ts';

/**
 * What each resource's lines may do, and how: the single call's body schema, scope and service, so
 * that a line is checked, applied and refused exactly as that call would be.
 */

/** What a line did, as its result reports it. */
export interface Applied {
  outcome: 'created' | 'updated' | 'unchanged';
  id: string;
  variantIds?: string[];
  /** A dry run's item create: the variants it would have made. */
  variants?: number;
  /** A dry run's line that names what these earlier lines would have made: checked without it. */
  checkedWithout?: number[];
}

interface Operation {
  area: Area;
  create?: {
    check: ValidateFunction;
    apply(ctx: WriteContext, data: any, line: ParsedLine): Promise<Applied>;
    /** Creates several at once as `apply` each would: each line's result, or the error it alone fails with. */
    applyMany?(ctx: WriteContext, lines: ParsedLine[]): Promise<(Applied | ApiError)[]>;
  };
  patch?: { check: ValidateFunction; apply(ctx: WriteContext, id: string, data: any): Promise<Applied> };
  /**
   * Upsert by a property: where the create body keeps the record's properties, and the first two
   * live records whose property has a value (through the resource's own list filter).
   */
  keyed?: {
    properties(data: any): unknown;
    /** Records of a fulfilment line's own order only: a shipment is matched among its order's. */
    matching(db: Db, businessId: string, property: PropertyFilter, line: ParsedLine): Promise<string[]>;
  };
}

const firstTwo = { page: 1, limit: 2, includeDeleted: false } as const;

/** The live partnerships of the buyers that order lines name, read in one query. */
const buyersOf = (ctx: WriteContext, lines: ParsedLine[]) =>
  findBuyerPartnerships(
    ctx.trx,
    ctx.businessId,
    lines.flatMap((line) => (line.buyerId === undefined ? [] : [line.buyerId])),
  );

/** The partnership of an order line's buyer, among those read, or the single call's error for its path. */
function partnershipOf(line: ParsedLine, known: Map<string, Partnership | undefined>): Partnership {
  if (line.buyerId === undefined) throw validationError({ buyerId: 'Required: the buyer the order is for' });
  const partnership = known.get(line.buyerId);
  if (!partnership) throw notFound(BUYER_NOT_FOUND);
  return partnership;
}

const NEEDS_ORDER = { acknowledgement: true, shipment: true };

/** The order an acknowledgement or shipment line is of: its `orderId`, as the single call's path names it. */
function orderOf(line: ParsedLine): string {
  if (line.orderId === undefined) throw validationError({ orderId: `Required: the order the ${line.resource} is of` });
  return line.orderId;
}
const ids = (page: { items: { id: string }[] }) => page.items.map((r) => r.id);

/** A patch's result; one that would change nothing writes nothing (src/write/update.ts). */
const patched = (written: { resource: { id: string }; unchanged?: true }): Applied => ({
  outcome: written.unchanged ? 'unchanged' : 'updated',
  id: written.resource.id,
});

const OPERATIONS: Record<ResourceName, Operation> = {
  item: {
    area: 'items',
    create: {
      check: compileBody(CreateItemBody),
      apply: async (ctx, data) => {
        const { resource, variantIds } = await createItem(ctx, data);
        return { outcome: 'created', id: resource.id, variantIds };
      },
      applyMany: async (ctx, lines) =>
        (
          await createItems(
            ctx,
            lines.map((l) => l.data as CreateItemInput),
          )
        ).map((r) => (r instanceof ApiError ? r : { outcome: 'created', id: r.resource.id, variantIds: r.variantIds })),
    },
    patch: {
      check: compileBody(UpdateItemBody),
      apply: async (ctx, id, data) => {
        const written = await patchItem(ctx, id, data);
        return { ...patched(written), variantIds: written.resource.variants.map((v) => v.id) };
      },
    },
    keyed: {
      properties: (data) => data.item?.properties,
      matching: async (db, businessId, property) => ids(await listItems(db, businessId, { ...firstTwo, property })),
    },
  },
  buyer: {
    area: 'buyers',
    create: {
      check: compileBody(CreateBuyerBody),
      apply: async (ctx, data) => ({ outcome: 'created', id: (await createBuyer(ctx, data)).resource.id }),
    },
    patch: {
      check: compileBody(UpdateBuyerBody),
      apply: async (ctx, id, data) => patched(await patchBuyer(ctx, id, data)),
    },
    keyed: {
      properties: (data) => data.buyer?.properties,
      matching: async (db, businessId, property) => ids(await listBuyers(db, businessId, { ...firstTwo, property })),
    },
  },
  price_list: {
    area: 'pricing',
    create: {
      check: compileBody(CreatePriceListBody),
      apply: async (ctx, data) => ({ outcome: 'created', id: (await createPriceList(ctx, data)).resource.id }),
    },
  },
  order: {
    area: 'orders',
    create: {
      check: compileBody(CreateOrderBody),
      apply: async (ctx, data, line) => {
        const partnership = partnershipOf(line, await buyersOf(ctx, [line]));
        return { outcome: 'created', id: (await createOrder(ctx, partnership, data)).resource.id };
      },
      applyMany: async (ctx, lines) => {
        const known = await buyersOf(ctx, lines);
        const planned: Array<{ partnership: Partnership; input: CreateOrderInput } | ApiError> = [];
        for (const line of lines) {
          try {
            planned.push({ partnership: partnershipOf(line, known), input: line.data as CreateOrderInput });
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
            planned.push(error);
          }
        }
        const created = await createOrders(
          ctx,
          planned.filter((p): p is Exclude<typeof p, ApiError> => !(p instanceof ApiError)),
        );
        let next = 0;
        return planned.map((p) => {
          if (p instanceof ApiError) return p;
          const r = created[next++];
          return r instanceof ApiError ? r : { outcome: 'created', id: r.resource.id };
        });
      },
    },
    patch: {
      check: compileBody(UpdateOrderBody),
      apply: async (ctx, id, data) => patched(await patchOrder(ctx, id, data, undefined)),
    },
    keyed: {
      properties: (data) => data.properties,
      matching: async (db, businessId, property) => ids(await listOrders(db, businessId, { ...firstTwo, property })),
    },
  },
  invoice: {
    area: 'invoices',
    create: {
      check: compileBody(CreateInvoiceBody),
      apply: async (ctx, data) => ({ outcome: 'created', id: (await createInvoice(ctx, data)).resource.id }),
    },
    patch: {
      check: compileBody(UpdateInvoiceBody),
      apply: async (ctx, id, data) => patched(await patchInvoice(ctx, id, data, undefined)),
    },
    keyed: {
      properties: (data) => data.properties,
      matching: async (db, businessId, property) => ids(await listInvoices(db, businessId, { ...firstTwo, property })),
    },
  },
  acknowledgement: {
    area: 'fulfilment',
    create: {
      check: compileBody(CreateAcknowledgementBody),
      apply: async (ctx, data, line) => ({
        outcome: 'created',
        id: (await acknowledgeOrder(ctx, orderOf(line), data)).id,
      }),
    },
  },
  shipment: {
    area: 'fulfilment',
    create: {
      check: compileBody(CreateShipmentBody),
      apply: async (ctx, data, line) => ({
        outcome: 'created',
        id: (await createShipment(ctx, orderOf(line), data)).resource.id,
      }),
    },
    patch: {
      check: compileBody(UpdateShipmentBody),
      apply: async (ctx, id, data) => patched(await patchShipment(ctx, id, data, undefined)),
    },
    keyed: {
      properties: (data) => data.properties,
      matching: async (db, businessId, property, line) =>
        ids(await listShipments(db, businessId, { ...firstTwo, property, orderId: orderOf(line) })),
    },
  },
};

/** A path in an upsert's `patch`, as the line's other errors name it. */
const inPatch = (path: string | undefined) => path && `patch.${path}`;

/**
 * Checks a resolved line against what its key may do and what its operation takes: the same
 * scopes as the single call (`items:write` for an item line; `margin:write` to send cost fields),
 * and the same body schema, whose defaults it fills in.
 */
export function checkOperation(line: ParsedLine, scopes: Scope[] | null): void {
  const operation = OPERATIONS[line.resource];
  const needed: Scope = `${operation.area}:write`;
  if (!allows(scopes, needed)) throw forbidden(`This API key lacks the scope ${needed}`);
  const field = allows(scopes, 'margin:write')
    ? undefined
    : (marginFieldIn(line.data) ?? inPatch(line.patch && marginFieldIn(line.patch)));
  if (field) throw forbidden(`This API key lacks the scope margin:write (it sent ${field})`);
  const offered = (['create', 'patch', 'upsert'] as const).filter((op) =>
    op === 'upsert' ? operation.create && operation.patch : operation[op],
  );
  if (!offered.includes(line.op)) {
    const article = /^[aeiou]/.test(line.resource) ? 'An' : 'A';
    throw validationError({ op: `${article} ${line.resource} line takes op ${offered.join(' or ')}` });
  }
  if (line.op === 'patch' && line.id === undefined) throw validationError({ id: 'Required: the record to patch' });
  if (line.op !== 'patch' && line.id !== undefined)
    throw validationError({
      id: `Only a patch line takes id: ${line.op === 'create' ? 'a create makes' : 'an upsert finds'} its own`,
    });
  if (line.orderId !== undefined && (line.op === 'patch' || !(line.resource in NEEDS_ORDER)))
    throw validationError({ orderId: 'Only an acknowledgement or shipment line that creates takes orderId' });
  if (line.op === 'upsert') {
    if (line.match === undefined)
      throw validationError({
        match: 'Required: the key an upsert finds its record by (handle, or properties.<path>)',
      });
    if (line.match === 'handle' && line.resource !== 'item')
      throw validationError({ match: 'Only items have a handle: match a property path (properties.<path>)' });
    if (line.patch !== undefined) checkBody(operation.patch!.check, line.patch, 'patch');
  } else if (line.match !== undefined || line.patch !== undefined) {
    throw validationError({
      [line.match !== undefined ? 'match' : 'patch']: 'Only an upsert line takes match and patch',
    });
  }
  checkBody(line.op === 'patch' ? operation.patch!.check : operation.create!.check, line.data);
  if (line.op === 'upsert') keyOf(line);
}

function checkBody(check: ValidateFunction, body: unknown, under?: string): void {
  if (check(body)) return;
  const error = bodyError(check.errors ?? [], body);
  if (!under || !error.fieldErrors) throw error;
  throw validationError(
    Object.fromEntries(Object.entries(error.fieldErrors).map(([path, message]) => [`${under}.${path}`, message])),
  );
}

/** An upsert line's key: the item's handle, or the property at the path, as `data` (the create body) gives it. */
function keyOf(line: ParsedLine): { handle: string } | { property: PropertyFilter } {
  const data = line.data as any;
  if (line.match === 'handle') {
    if (typeof data.item?.handle !== 'string')
      throw validationError({ 'item.handle': 'Required: the handle this upsert matches on' });
    return { handle: data.item.handle };
  }
  const segments = line.match!.split('.').slice(1);
  let value: unknown = OPERATIONS[line.resource].keyed!.properties(data);
  for (const segment of segments)
    value =
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as Record<string, unknown>)[segment]
        : undefined;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw validationError({
      match: `The record's properties have no text, number or boolean at ${segments.join('.')} to match on`,
    });
  }
  return { property: { segments, value: String(value) } };
}

/** The operation that applies checked create lines of the line's kind several at once, if there is one. */
export function createsMany(
  line: ParsedLine,
): ((ctx: WriteContext, lines: ParsedLine[]) => Promise<(Applied | ApiError)[]>) | undefined {
  return line.op === 'create' ? OPERATIONS[line.resource].create?.applyMany : undefined;
}

/** Applies a checked line in the write's transaction. */
export async function applyLine(ctx: WriteContext, line: ParsedLine): Promise<Applied> {
  const operation = OPERATIONS[line.resource];
  if (line.op === 'create') return operation.create!.apply(ctx, line.data, line);
  if (line.op === 'patch') return operation.patch!.apply(ctx, line.id!, line.data);
  const key = keyOf(line);
  const found =
    'handle' in key
      ? [await findItemIdByHandle(ctx.trx, ctx.businessId, key.handle)].filter((id) => id !== undefined)
      : await operation.keyed!.matching(ctx.trx, ctx.businessId, key.property, line);
  if (found.length > 1)
    throw conflict(
      `More than one ${line.resource.replace('_', ' ')} has ${line.match} ` +
        JSON.stringify('handle' in key ? key.handle : key.property.value),
    );
  if (found.length === 0) return operation.create!.apply(ctx, line.data, line);
  if (line.patch === undefined) {
    // No patch: create the record unless it exists. An item's result still names its variants, for later lines' references.
    const item = line.resource === 'item' ? await findItem(ctx.trx, ctx.businessId, found[0]) : undefined;
    return { outcome: 'unchanged', id: found[0], variantIds: item?.variants.map((v) => v.id) };
  }
  return operation.patch!.apply(ctx, found[0], line.patch);
}
