import { rawQueryOf } from '../http/cursor.ts';
import { createHash } from 'node:crypto';
import { Type } from 'typebox';
import { findBuyerPartnership } from '../buyers/repository.ts';
import { BUYER_NOT_FOUND, PARTNERSHIP_AS_BUYER_HINT } from '../buyers/service.ts';
import { ApiError, notFound, validationError } from '../lib/errors.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import { pageJson, sendRendered, serializerOf } from '../http/rendered.ts';
import { SuccessResponse } from '../http/schema.ts';
import { INGESTION_KEY_HINT, invalidKey } from '../http/write.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { registerExport } from '../http/export.ts';
import { exportOrders } from './export-repository.ts';
import { parseDateTime } from '../lib/time.ts';
import { etagOf, parseIfMatch } from '../http/etag.ts';
import { readAtOneMoment } from '../db/dialect.ts';
import { listOrders } from './read-model/index.ts';
import { patchOrder } from './patch-service.ts';
import { findOrderRow, findOrderRowWithItems } from './repository.ts';
import { loadOneOrderItems } from './items-repository.ts';
import { readOrderStamp } from './shared-reads.ts';
import { renderOrder, renderOrders } from './render.ts';
import {
  BuyerOrderParams,
  CreateOrderBody,
  GUIDE_STATUSES,
  IngestOrderBody,
  ListOrdersQuery,
  OrderListResponse,
  OrderParams,
  OrderResponse,
  UpdateOrderBody,
} from './schema.ts';
import { createOrder, deleteOrder, ingestOrder, ORDER_NOT_FOUND } from './service.ts';

const tags = ['Orders'];
const preconditionFailed = Type.Unsafe<unknown>({
  $ref: 'ErrorResponse#',
  description: 'If-Match named a version that is no longer current; nothing was changed',
});
const since = (value: string | undefined) => (value === undefined ? undefined : parseDateTime(value));

/** Contract 4.3: the key, when sent, is the hex SHA-256 of `${orderId}-${businessId}-order-integration`. */
export const ingestionKeyOf = (orderId: string, businessId: string) =>
  createHash('sha256').update(`${orderId}-${businessId}-order-integration`).digest('hex');

export async function orderRoutes(
  app: ApiInstance,
  { db, runWrite, orderCache, cursors, openSnapshot, orderListTuning }: RouteDeps,
) {
  registerExport(app, openSnapshot, { path: 'orders', tag: 'Orders', noun: 'order', batch: exportOrders });

  app.post(
    '/buyers/:id/orders',
    {
      config: { extension: true, etag: true },
      schema: {
        tags,
        operationId: 'createBuyerOrder',
        summary: 'Create an order for a buyer, priced from its item list',
        description:
          "Each item names exactly one of itemVariantId (priced from the buyer's price list, falling back to the default list) " +
          'and itemListEntryId; at most one item per item list entry (400 otherwise). Items must share one currency, which the order ' +
          'takes (currency, when sent, must equal it). totalAmount is the sum of quantity × price.',
        params: BuyerOrderParams,
        body: CreateOrderBody,
        response: { 201: OrderResponse },
      },
    },
    async (request, reply) => {
      const partnership = await findBuyerPartnership(db, request.businessId, request.params.id);
      if (!partnership)
        throw request.params.id.startsWith('prt_')
          ? new ApiError('NOT_FOUND', BUYER_NOT_FOUND, undefined, PARTNERSHIP_AS_BUYER_HINT)
          : notFound(BUYER_NOT_FOUND);
      return runWrite(request, reply, async (ctx) => {
        const { resource } = await createOrder(ctx, partnership, request.body);
        return { status: 201, body: resource, headers: { etag: etagOf(resource.version) } };
      });
    },
  );

  app.post(
    '/orders',
    {
      config: { replays: false, namesOther: true },
      schema: {
        tags,
        operationId: 'createOrder',
        summary: 'Announce an order (ingestion notification); idempotent',
        description:
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the key's recipe, shown as written
          'The Idempotency-Key, when sent, must be the hex SHA-256 of `${orderId}-${businessId}-order-integration`; ' +
          'otherwise 400 "Invalid idempotency key format". Repeats change nothing.',
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({
              pattern: '^[0-9a-fA-F]{64}$',
              description:
                // biome-ignore lint/suspicious/noTemplateCurlyInString: the key's recipe, shown as written
                'The lowercase or uppercase hex SHA-256 of `${orderId}-${businessId}-order-integration`; anything else is 400',
            }),
          ),
        }),
        body: IngestOrderBody,
        response: { 202: SuccessResponse },
      },
    },
    async (request, reply) => {
      const { orderId, businessId } = request.body;
      if (businessId !== request.businessId)
        throw validationError({ businessId: 'Must be the business of the credentials' });
      const key = request.headers['idempotency-key'];
      // The key is fully determined by the body, and repeats change nothing, so no replay store is needed.
      if (key !== undefined && (typeof key !== 'string' || key.toLowerCase() !== ingestionKeyOf(orderId, businessId))) {
        throw invalidKey(INGESTION_KEY_HINT);
      }
      // Read before the write takes its business's lock: a repeat changes nothing and needs no write,
      // nor more than the order's stamp.
      const stamp = await readOrderStamp(db, businessId, orderId);
      if (stamp?.ingested) return reply.code(202).send({ success: true });
      const row = stamp && (await findOrderRow(db, businessId, orderId));
      if (!row) throw notFound(ORDER_NOT_FOUND);
      if (row.ingested_at !== null) return reply.code(202).send({ success: true });
      const seen = { row, items: await loadOneOrderItems(db, businessId, orderId) };
      return runWrite(request, reply, async (ctx) => {
        await ingestOrder(ctx, orderId, seen);
        return { status: 202, body: { success: true } };
      });
    },
  );

  app.get(
    '/orders',
    {
      schema: {
        tags,
        operationId: 'listOrders',
        summary: 'List orders with their items, newest first',
        description:
          'Examples: `?propertyPath=sage200Evo.salesOrderNo&propertyExists=false` (orders not yet synced to an ERP), ' +
          '`?propertyPath=sage200Evo.salesOrderNo&propertyValue=12345`, ' +
          '`?phase=ACTIVE&status=ACCEPTED&propertyPath=sage200Evo.salesOrderNo&propertyExists=false`, ' +
          '`?modifiedSince=2025-01-15T10:30:00.000Z` (poll for changes). Soft-deleted orders are left out unless includeDeleted=true.\n\n' +
          'modifiedSince cannot be combined with createdSince or updatedSince (400); createdSince and updatedSince may be combined.',
        querystring: ListOrdersQuery,
        response: { 200: OrderListResponse },
      },
    },
    async (request, reply) => {
      const { query, businessId } = request;
      if (query.modifiedSince !== undefined && (query.createdSince !== undefined || query.updatedSince !== undefined)) {
        throw validationError({ modifiedSince: 'modifiedSince cannot be combined with createdSince or updatedSince' });
      }
      const options = {
        ...cursors.paging('orders', businessId, query, rawQueryOf(request)),
        includeDeleted: query.includeDeleted,
        createdSince: since(query.createdSince),
        updatedSince: since(query.updatedSince),
        modifiedSince: since(query.modifiedSince),
        phase: query.phase,
        status:
          query.status === undefined
            ? undefined
            : (GUIDE_STATUSES[query.status as keyof typeof GUIDE_STATUSES] ?? query.status),
        property: readPropertyFilter(query),
        tuning: orderListTuning,
      };
      const read = async (at: typeof db) => {
        const listed = await listOrders(at, businessId, options);
        return {
          page: listed,
          items: await renderOrders(at, orderCache, businessId, listed.items, serializerOf(reply, OrderResponse)),
        };
      };
      // A list since a time is how an integration polls: its ids, rows and total are read at one
      // moment, so that the largest time on the page stands for every write before it. Other lists
      // may show a row newer than the moment its id was read, which costs a poller nothing.
      const changedSince = options.createdSince ?? options.updatedSince ?? options.modifiedSince;
      const { page, items } = changedSince === undefined ? await read(db) : await readAtOneMoment(db, read);
      return sendRendered(reply, pageJson({ ...page, items }, cursors.next('orders', businessId, query, page)));
    },
  );

  app.get(
    '/orders/:id',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'getOrder',
        summary: 'Get an order with its items',
        params: OrderParams,
        response: { 200: OrderResponse },
      },
    },
    async (request, reply) => {
      const order = await renderOrder(
        db,
        orderCache,
        request.businessId,
        request.params.id,
        serializerOf(reply, OrderResponse),
      );
      if (!order) throw notFound(ORDER_NOT_FOUND);
      return sendRendered(reply.header('etag', etagOf(order.version)), order.json);
    },
  );

  app.patch(
    '/orders/:id',
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: 'updateOrder',
        summary: "Update an order's fields, properties and items in one transaction",
        description:
          'Every part is optional, but a body with nothing to change is 400 "No valid fields provided for update". ' +
          'order.properties is deep-merged (objects merge, arrays and scalars replace, null is stored). ' +
          'createOrderItems needs an itemListEntryId the order does not have yet: one line per entry (400 otherwise); ' +
          "a variant's entries are listed by GET /api/v1/pricing/{id}. Unknown ids in updateOrderItems or deleteOrderItems are 404. " +
          'totalAmount is recomputed from the items when they change, unless the same request sends order.totalAmount. ' +
          'Send If-Match with the last ETag to get 412 instead of overwriting a change made in between.',
        params: OrderParams,
        body: UpdateOrderBody,
        headers: Type.Object({
          'if-match': Type.Optional(
            Type.String({ maxLength: 200, description: 'The ETag last read ("<version>"); a stale one gives 412' }),
          ),
        }),
        response: { 200: OrderResponse, 412: preconditionFailed },
      },
    },
    async (request, reply) => {
      // Read before the write takes its business's lock; patchOrder writes only at the version seen.
      const seen = await findOrderRowWithItems(db, request.businessId, request.params.id);
      return runWrite(request, reply, async (ctx) => {
        const { resource } = await patchOrder(
          ctx,
          request.params.id,
          request.body,
          parseIfMatch(request.headers['if-match']),
          seen,
        );
        return { status: 200, body: resource, headers: { etag: etagOf(resource.version) } };
      });
    },
  );

  app.delete(
    '/orders/:id',
    {
      schema: {
        tags,
        operationId: 'deleteOrder',
        summary: 'Soft-delete an order',
        params: OrderParams,
        response: { 204: Type.Null({ description: 'Deleted; no body' }) },
      },
    },
    async (request, reply) => {
      return runWrite(request, reply, async (ctx) => {
        await deleteOrder(ctx, request.params.id);
        return { status: 204 };
      });
    },
  );
}
