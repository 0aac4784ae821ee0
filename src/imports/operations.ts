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
import { forbidden, notFound, validationError } from '../lib/errors.ts';
import { CreateOrderBody, UpdateOrderBody } from '../orders/schema.ts';
import { createOrder } from '../orders/service.ts';
import { patchOrder } from '../orders/patch-service.ts';
import { CreatePriceListBody } from '../pricing/schema.ts';
import { createPriceList } from '../pricing/service.ts';
import type { WriteContext } from '../write/runner.ts';
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

