import { Type } from 'typebox';
import { NO_ETAG_RESPONSE, refuseIfMatch } from '../http/etag.ts';
import { notFound } from '../lib/errors.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import { IdParams } from '../http/schema.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { registerExport } from '../http/export.ts';
import { exportItems } from './repository.ts';
import { parseDateTime } from '../lib/time.ts';
import { findItem, listItems } from './repository.ts';
import {
  CreateItemBody,
  CreateItemResponse,
  ItemListResponse,
  ItemResponse,
  ListItemsQuery,
  UpdateItemBody,
} from './schema.ts';
import { createItem, deleteItem, ITEM_NOT_FOUND, patchItem } from './service.ts';

const tags = ['Items'];

export async function itemRoutes(app: ApiInstance, { db, runWrite, cursors, openSnapshot }: RouteDeps) {
  registerExport(app, openSnapshot, { path: 'items', tag: 'Items', noun: 'item', batch: exportItems });

  app.post(
    '/items',
    {
      schema: {
        tags,
        operationId: 'createItem',
        summary: 'Create an item with its variants',
        body: CreateItemBody,
        response: { 201: CreateItemResponse },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource, variantIds } = await createItem(ctx, request.body);
        return { status: 201, body: { success: true, id: resource.id, variantIds } };
      }),
  );

  app.get(
    '/items',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listItems',
        summary: 'List items, newest first',
        querystring: ListItemsQuery,
        response: { 200: ItemListResponse },
      },
    },
    async (request) => {
      const { query } = request;
      return cursors.list(request, 'items', (paging) =>
        listItems(db, request.businessId, {
          ...paging,
          // Asking for DELETED items is asking for deleted items.
          includeDeleted: query.includeDeleted || query.status === 'DELETED',
          status: query.status,
          updatedSince: query.updatedSince === undefined ? undefined : parseDateTime(query.updatedSince),
          property: readPropertyFilter(query),
        }),
      );
    },
  );

  app.get(
    '/items/:id',
    {
      schema: {
        tags,
        operationId: 'getItem',
        summary: 'Get an item with its variants',
        params: IdParams,
        response: { 200: ItemResponse },
      },
    },
    async (request) => {
      const item = await findItem(db, request.businessId, request.params.id);
      if (!item) throw notFound(ITEM_NOT_FOUND);
      return item;
    },
  );

  app.patch(
    '/items/:id',
    {
      schema: {
        tags,
        operationId: 'updateItem',
        summary: 'Update an item and create, update or delete its variants',
        params: IdParams,
        body: UpdateItemBody,
        response: { 200: ItemResponse, 412: NO_ETAG_RESPONSE },
      },
    },
    (request, reply) => {
      refuseIfMatch(request.headers['if-match'], 'Items');
      return runWrite(request, reply, async (ctx) => {
        const { resource } = await patchItem(ctx, request.params.id, request.body);
        return { status: 200, body: resource };
      });
    },
  );

  app.delete(
    '/items/:id',
    {
      schema: {
        tags,
        operationId: 'deleteItem',
        summary: 'Soft-delete an item and its variants',
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted; no body' }) },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        await deleteItem(ctx, request.params.id);
        return { status: 204 };
      }),
  );
}
