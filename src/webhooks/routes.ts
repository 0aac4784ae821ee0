import { Type } from 'typebox';
import { NO_ETAG_RESPONSE, refuseIfMatch } from '../http/etag.ts';
import { eventsGoneResponse } from '../events/schema.ts';
import { badRequest, notFound } from '../lib/errors.ts';
import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { toEndpoint } from './mapper.ts';
import { findEndpointRow, listDeliveries, listEndpoints } from './repository.ts';
import {
  CreateWebhookEndpointBody,
  DeliveryPage,
  ListDeliveriesQuery,
  ListWebhookEndpointsQuery,
  ReplayBody,
  ReplayResponse,
  RotateSecretBody,
  TestResponse,
  UpdateWebhookEndpointBody,
  WebhookEndpointPage,
  WebhookEndpointParams,
  WebhookEndpointResponse,
  WebhookEndpointWithSecret,
} from './schema.ts';
import {
  createEndpoint,
  MAX_ENDPOINTS,
  deleteEndpoint,
  ENDPOINT_NOT_FOUND,
  rotateSecret,
  updateEndpoint,
} from './service.ts';
import { replayRange, sendTestEvent } from './redelivery.ts';
import type { WebhookSettings } from './checks.ts';

const tags = ['Webhooks'];
const config = { extension: true };

export async function webhookRoutes(
  app: ApiInstance,
  deps: RouteDeps & { webhooks: WebhookSettings; clock: () => number; kick: () => void },
) {
  const { db, runWrite, cursors, webhooks: settings, clock, kick } = deps;
  // Test events, replays and newly enabled endpoints raise no event the worker would see: tell it
  // after any successful change. The hook is the whole /api/v1 scope's, so it checks the route.
  app.addHook('onResponse', (request, reply, done) => {
    if (
      request.method !== 'GET' &&
      reply.statusCode >= 200 &&
      reply.statusCode < 300 &&
      request.routeOptions.url?.startsWith('/api/v1/webhook-endpoints')
    )
      kick();
    done();
  });
  const now = () => new Date(clock()).toISOString();

  app.post(
    '/webhook-endpoints',
    {
      config,
      schema: {
        tags,
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint; the answer shows its signing secret, this once',
        body: CreateWebhookEndpointBody,
        response: {
          201: WebhookEndpointWithSecret,
          409: Type.Unsafe<unknown>({
            $ref: 'ErrorResponse#',
            description: `The business has ${MAX_ENDPOINTS} webhook endpoints already, or the Idempotency-Key is in use`,
          }),
        },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { endpoint, secret } = await createEndpoint(ctx, request.body, settings, request.hidesMargin);
        return { status: 201, body: { ...endpoint, secret }, sealed: true };
      }),
  );

  app.get(
    '/webhook-endpoints',
    {
      config,
      schema: {
        tags,
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints, oldest first',
        querystring: ListWebhookEndpointsQuery,
        response: { 200: WebhookEndpointPage },
      },
    },
    async (request) =>
      cursors.list(request, 'webhook-endpoints', (paging) => listEndpoints(db, request.businessId, paging, now())),
  );

  app.get(
    '/webhook-endpoints/:id',
    {
      config,
      schema: {
        tags,
        operationId: 'getWebhookEndpoint',
        summary: 'Get a webhook endpoint (never its secret)',
        params: WebhookEndpointParams,
        response: { 200: WebhookEndpointResponse },
      },
    },
    async (request) => {
      const row = await findEndpointRow(db, request.businessId, request.params.id);
      if (!row) throw notFound(ENDPOINT_NOT_FOUND);
      return toEndpoint(row, now());
    },
  );

  app.patch(
    '/webhook-endpoints/:id',
    {
      config,
      schema: {
        tags,
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint: URL, description, event types, or status (pause, resume, disable)',
        params: WebhookEndpointParams,
        body: UpdateWebhookEndpointBody,
        response: { 200: WebhookEndpointResponse, 412: NO_ETAG_RESPONSE },
      },
    },
    (request, reply) => {
      refuseIfMatch(request.headers['if-match'], 'Webhook endpoints');
      return runWrite(request, reply, async (ctx) => ({
        status: 200,
        body: await updateEndpoint(ctx, request.params.id, request.body, settings, request.hidesMargin),
      }));
    },
  );

  app.delete(
    '/webhook-endpoints/:id',
    {
      config,
      schema: {
        tags,
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint; what it has not delivered yet is cancelled',
        params: WebhookEndpointParams,
        response: { 204: Type.Null({ description: 'Deleted; no body' }) },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        await deleteEndpoint(ctx, request.params.id);
        return { status: 204 };
      }),
  );

  app.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      config,
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Make a new signing secret, shown this once; the previous one signs beside it for the grace period',
        params: WebhookEndpointParams,
        body: RotateSecretBody,
        response: { 200: WebhookEndpointWithSecret },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => {
        const { endpoint, secret } = await rotateSecret(
          ctx,
          request.params.id,
          request.body.gracePeriodSeconds ?? 86_400,
          settings,
        );
        return { status: 200, body: { ...endpoint, secret }, sealed: true };
      }),
  );

  app.post(
    '/webhook-endpoints/:id/test',
    {
      config,
      preValidation: async (request) => {
        const { body } = request as { body: unknown };
        if (
          body !== undefined &&
          !(body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)
        ) {
          throw badRequest('This operation takes no body (send none, or {})');
        }
      },
      schema: {
        tags,
        operationId: 'testWebhookEndpoint',
        summary: 'Send a webhook.test event to this endpoint (not part of the event log)',
        params: WebhookEndpointParams,
        response: { 202: TestResponse },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => ({ status: 202, body: await sendTestEvent(ctx, request.params.id) })),
  );

  app.post(
    '/webhook-endpoints/:id/replay',
    {
      config,
      schema: {
        tags,
        operationId: 'replayWebhookEvents',
        summary: "Deliver the events of a sequence range again (those the endpoint's types take), in order",
        params: WebhookEndpointParams,
        body: ReplayBody,
        response: { 202: ReplayResponse, 410: eventsGoneResponse('afterSequence') },
      },
    },
    (request, reply) =>
      runWrite(request, reply, async (ctx) => ({
        status: 202,
        body: await replayRange(ctx, request.params.id, request.body.afterSequence, request.body.untilSequence),
      })),
  );

  app.get(
    '/webhook-endpoints/:id/deliveries',
    {
      config,
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary:
          'The delivery log of an endpoint, oldest first: each event sent, its state, and every attempt with the response',
        params: WebhookEndpointParams,
        querystring: ListDeliveriesQuery,
        response: { 200: DeliveryPage },
      },
    },
    async (request) => {
      const row = await findEndpointRow(db, request.businessId, request.params.id);
      if (!row) throw notFound(ENDPOINT_NOT_FOUND);
      return { ...(await listDeliveries(db, request.businessId, row.id, request.query)), endpointStatus: row.status };
    },
  );
}
