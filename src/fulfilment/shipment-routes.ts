import { Type } from 'typebox';
import { notFound } from '../lib/errors.ts';
import { etagOf, parseIfMatch } from '../http/etag.ts';
import { registerExport } from '../http/export.ts';
import { readPropertyFilter } from '../http/list-query.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { parseDateTime } from '../lib/time.ts';
import { OrderParams } from '../orders/schema.ts';
import { requireLiveOrder } from '../orders/service.ts';
import { exportShipments, findShipmentRow, listShipments, toShipment } from './shipment-repository.ts';
import {
  CreateShipmentBody,
  ListShipmentsQuery,
  OrderShipmentsQuery,
  ShipmentListResponse,
  ShipmentParams,
  ShipmentResponse,
  UpdateShipmentBody,
} from './shipment-schema.ts';
import { createShipment, patchShipment, SHIPMENT_NOT_FOUND, voidShipment } from './shipment-service.ts';

const tags = ['Shipments'];
const ref = (description: string) => Type.Unsafe<unknown>({ $ref: 'ErrorResponse#', description });
const since = (value: string | undefined) => (value === undefined ? undefined : parseDateTime(value));

export async function shipmentRoutes(app: ApiInstance, { db, runWrite, cursors, openSnapshot }: RouteDeps) {
  registerExport(app, openSnapshot, { path: 'shipments', tag: 'Shipments', noun: 'shipment', batch: exportShipments });

  app.post(
    '/orders/:id/shipments',
    {
      config: { extension: true, etag: true },
      schema: {
        tags,
        operationId: 'createShipment',
        summary: 'Record a shipment of an order: packages, lines and tracking (what an X12 856 carries)',
        description:
          'Checked under the business’s write lock: what shipments not voided hold of a line never exceeds its ordered ' +
          'quantity less what the current acknowledgement rejected (409 names the line and what is left). When every ' +
          'line that may ship has shipped, the order becomes IN_TRANSIT with the latest shippedAt, in the same write.',
        params: OrderParams,
        body: CreateShipmentBody,
        response: {
          201: ShipmentResponse,
          409: ref('A line would ship more than is left of it, or the Idempotency-Key is in use'),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource } = await createShipment(ctx, request.params.id, request.body);
        return { status: 201, body: resource, headers: { etag: etagOf(resource.version) } };
      }),
  );

  app.get(
    '/orders/:id/shipments',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listOrderShipments',
        summary: "An order's shipments, newest first, voided ones included",
        params: OrderParams,
        querystring: OrderShipmentsQuery,
        response: { 200: ShipmentListResponse },
      },
    },
    async (request) => {
      const orderId = request.params.id;
      await requireLiveOrder(db, request.businessId, orderId);
      return cursors.list(request, `shipments/${orderId}`, (paging) =>
        listShipments(db, request.businessId, { ...paging, orderId, property: null }),
      );
    },
  );

  app.get(
    '/shipments',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listShipments',
        summary: 'List shipments, newest first, voided ones included',
        description: 'A mirror follows changes with `modifiedSince` (the largest updatedAt seen) and cursor pages.',
        querystring: ListShipmentsQuery,
        response: { 200: ShipmentListResponse },
      },
    },
    async (request) => {
      const { query } = request;
      return cursors.list(request, 'shipments', (paging) =>
        listShipments(db, request.businessId, {
          ...paging,
          orderId: query.orderId,
          status: query.status,
          createdSince: since(query.createdSince),
          modifiedSince: since(query.modifiedSince),
          property: readPropertyFilter(query),
        }),
      );
    },
  );

  app.get(
    '/shipments/:id',
    {
      config: { extension: true, etag: true },
      schema: {
        tags,
        operationId: 'getShipment',
        summary: 'Get a shipment with its packages and lines',
        params: ShipmentParams,
        response: { 200: ShipmentResponse },
      },
    },
    async (request, reply) => {
      const row = await findShipmentRow(db, request.businessId, request.params.id);
      if (!row) throw notFound(SHIPMENT_NOT_FOUND);
      return reply.header('etag', etagOf(Number(row.version))).send(toShipment(row));
    },
  );

  app.patch(
    '/shipments/:id',
    {
      config: { extension: true, etag: true },
      schema: {
        tags,
        operationId: 'updateShipment',
        summary: "Update a shipment's tracking, carrier, status, delivery or properties",
        description:
          'When every shipment of a fully shipped order is DELIVERED, the order becomes DELIVERED in the same write.',
        params: ShipmentParams,
        body: UpdateShipmentBody,
        headers: Type.Object({
          'if-match': Type.Optional(
            Type.String({ maxLength: 200, description: 'The ETag last read ("<version>"); a stale one gives 412' }),
          ),
        }),
        response: {
          200: ShipmentResponse,
          409: ref('The shipment is voided, or its order was deleted, or the Idempotency-Key is in use'),
          412: ref('If-Match named a version that is no longer current; nothing was changed'),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { resource } = await patchShipment(
          ctx,
          request.params.id,
          request.body,
          parseIfMatch(request.headers['if-match']),
        );
        return { status: 200, body: resource, headers: { etag: etagOf(resource.version) } };
      }),
  );

  app.delete(
    '/shipments/:id',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'voidShipment',
        summary: 'Void a shipment: its quantities may ship again',
        description:
          'The shipment stays, with status VOIDED. The order keeps its status (set it with a PATCH of the order). ' +
          'Voiding a voided shipment answers it unchanged.',
        params: ShipmentParams,
        response: {
          200: ShipmentResponse,
          409: ref("The shipment's order was deleted: its shipments no longer change"),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const shipment = await voidShipment(ctx, request.params.id);
        return { status: 200, body: shipment, headers: { etag: etagOf(shipment.version) } };
      }),
  );
}
