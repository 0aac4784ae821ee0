import { notFound } from '../lib/errors.ts';
import { NO_ETAG_RESPONSE, refuseIfMatch } from '../http/etag.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { registerExport } from '../http/export.ts';
import { exportBuyers } from './repository.ts';
import { parseDateTime } from '../lib/time.ts';
import { findBuyer, listBuyers } from './repository.ts';
import {
  BuyerListResponse,
  BuyerParams,
  BuyerResponse,
  CreateBuyerBody,
  CreateBuyerResponse,
  ListBuyersQuery,
  UpdateBuyerBody,
} from './schema.ts';
import { BUYER_NOT_FOUND, createBuyer, patchBuyer } from './service.ts';

const tags = ['Buyers'];

export async function buyerRoutes(app: ApiInstance, { db, runWrite, cursors, openSnapshot }: RouteDeps) {
  registerExport(app, openSnapshot, { path: 'buyers', tag: 'Buyers', noun: 'buyer', batch: exportBuyers });

  app.post(
    '/buyers',
    {
      schema: {
        tags,
        operationId: 'createBuyer',
        summary: 'Create a phantom buyer: its partnership, organisation and contacts',
        body: CreateBuyerBody,
        response: { 201: CreateBuyerResponse },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource, partnershipId } = await createBuyer(ctx, request.body);
        return { status: 201, body: { success: true, id: resource.id, phantomId: resource.id, partnershipId } };
      }),
  );

  app.get(
    '/buyers',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listBuyers',
        summary: 'List buyers, newest first',
        querystring: ListBuyersQuery,
        response: { 200: BuyerListResponse },
      },
    },
    async (request) => {
      const { query } = request;
      return cursors.list(request, 'buyers', (paging) =>
        listBuyers(db, request.businessId, {
          ...paging,
          includeDeleted: query.includeDeleted,
          partnershipStatus: query.partnershipStatus,
          updatedSince: query.updatedSince === undefined ? undefined : parseDateTime(query.updatedSince),
          property: readPropertyFilter(query),
        }),
      );
    },
  );

  app.get(
    '/buyers/:id',
    {
      schema: {
        tags,
        operationId: 'getBuyer',
        summary: 'Get a buyer with its partnership and contacts',
        params: BuyerParams,
        response: { 200: BuyerResponse },
      },
    },
    async (request) => {
      const buyer = await findBuyer(db, request.businessId, request.params.id);
      if (!buyer) throw notFound(BUYER_NOT_FOUND);
      return buyer;
    },
  );

  app.patch(
    '/buyers/:id',
    {
      schema: {
        tags,
        operationId: 'updateBuyer',
        summary: 'Update a buyer, its partnership status, and create, update or delete its contacts',
        params: BuyerParams,
        body: UpdateBuyerBody,
        response: { 200: BuyerResponse, 412: NO_ETAG_RESPONSE },
      },
    },
    (request, reply) => {
      refuseIfMatch(request.headers['if-match'], 'Buyers');
      return runWrite(request, reply, async (ctx) => {
        const { resource } = await patchBuyer(ctx, request.params.id, request.body);
        return { status: 200, body: resource };
      });
    },
  );
}
