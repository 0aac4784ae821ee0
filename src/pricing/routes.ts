import { notFound } from '../lib/errors.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { parseDateTime } from '../lib/time.ts';
import { findPriceList, listPriceLists } from './repository.ts';
import {
  CreatePriceListBody,
  CreatePriceListResponse,
  ListPriceListsQuery,
  PriceListListResponse,
  PriceListParams,
  PriceListResponse,
} from './schema.ts';
import { createPriceList, PRICE_LIST_NOT_FOUND } from './service.ts';

const tags = ['Pricing'];

export async function pricingRoutes(app: ApiInstance, { db, runWrite, cursors }: RouteDeps) {
  app.post(
    '/pricing',
    {
      schema: {
        tags,
        operationId: 'createPriceList',
        summary: 'Create a price list with its entries, and assign it to partnerships',
        body: CreatePriceListBody,
        response: { 201: CreatePriceListResponse },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource } = await createPriceList(ctx, request.body);
        return { status: 201, body: { success: true, id: resource.id } };
      }),
  );

  app.get(
    '/pricing',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listPriceLists',
        summary: 'List price lists, newest first',
        querystring: ListPriceListsQuery,
        response: { 200: PriceListListResponse },
      },
    },
    async (request) => {
      const { query } = request;
      return cursors.list(request, 'pricing', (paging) =>
        listPriceLists(db, request.businessId, {
          ...paging,
          status: query.status,
          updatedSince: query.updatedSince === undefined ? undefined : parseDateTime(query.updatedSince),
        }),
      );
    },
  );

  app.get(
    '/pricing/:id',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'getPriceList',
        summary: 'Get a price list with its entries and partnerships',
        params: PriceListParams,
        response: { 200: PriceListResponse },
      },
    },
    async (request) => {
      const list = await findPriceList(db, request.businessId, request.params.id);
      if (!list) throw notFound(PRICE_LIST_NOT_FOUND);
      return list;
    },
  );
}
