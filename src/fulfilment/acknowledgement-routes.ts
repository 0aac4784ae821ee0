import { Type } from 'typebox';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { OrderParams } from '../orders/schema.ts';
import { requireLiveOrder } from '../orders/service.ts';
import { listAcknowledgements } from './acknowledgement-repository.ts';
import {
  AcknowledgementListResponse,
  AcknowledgementResponse,
  CreateAcknowledgementBody,
} from './acknowledgement-schema.ts';
import { acknowledgeOrder } from './acknowledgement-service.ts';
import { NoQuery } from '../http/schema.ts';

const tags = ['Acknowledgements'];
const ref = (description: string) => Type.Unsafe<unknown>({ $ref: 'ErrorResponse#', description });

export async function acknowledgementRoutes(app: ApiInstance, { db, runWrite }: RouteDeps) {
  app.post(
    '/orders/:id/acknowledgements',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'acknowledgeOrder',
        summary: 'Acknowledge an order line by line (what an X12 855 carries)',
        description:
          'Lines not named are accepted as ordered; the header decision is derived from the lines. The acknowledgement ' +
          "becomes the order's current one: the order shows its summary, takes `phase` if given, gets a new version " +
          'and an order.acknowledged event, all in one write. A line may not accept less than its shipments hold (409).',
        params: OrderParams,
        body: CreateAcknowledgementBody,
        response: {
          201: AcknowledgementResponse,
          409: ref('A line would accept less than its shipments hold, or the Idempotency-Key is in use'),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => ({
        status: 201,
        body: await acknowledgeOrder(ctx, request.params.id, request.body),
      })),
  );

  app.get(
    '/orders/:id/acknowledgements',
    {
      config: { extension: true },
      schema: {
        tags,
        operationId: 'listOrderAcknowledgements',
        summary: "An order's acknowledgements, newest first (the first is the current one)",
        params: OrderParams,
        querystring: NoQuery,
        response: { 200: AcknowledgementListResponse },
      },
    },
    async (request) => {
      await requireLiveOrder(db, request.businessId, request.params.id);
      return { items: await listAcknowledgements(db, request.businessId, request.params.id) };
    },
  );
}
