import { Type, type Static } from 'typebox';
import { Id, ListEnvelope, Nullable, PageQuery, Text } from '../http/schema.ts';

export const ENDPOINT_STATUSES = ['enabled', 'paused', 'disabled'] as const;
export const DELIVERY_STATUSES = ['queued', 'pending', 'delivering', 'succeeded', 'failed', 'cancelled'] as const;

/** An event type, or `order.*` for every type of a resource, or `*` for every event. */
const EventTypePattern = '^(?:\\*|[a-z_]{1,32}\\.(?:\\*|[a-z_]{1,32}))$';

const EndpointStatus = Type.Enum([...ENDPOINT_STATUSES], {
  title: 'WebhookEndpointStatus',
  description:
    'enabled: deliveries go out. paused: nothing goes out and the backlog is kept until it is enabled again ' +
    '(also set by the service after 5 days of failures). disabled: nothing goes out and the backlog is dropped (also set ' +
    'when the receiver answers 410); enabling it again starts from new events, and a replay sends older ones',
  examples: ['enabled'],
});

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  format: 'uri',
  description:
    'Where deliveries are POSTed: https, and not to a private or reserved address (checked at every delivery, on the address connected to)',
  examples: ['https://erp.example.com/hooks/supplyline'],
});

const EventTypes = Type.Array(Type.String({ pattern: EventTypePattern, maxLength: 65 }), {
  maxItems: 100,
  uniqueItems: true,
  description:
    'Event types to deliver; `order.*` matches every order event; empty (the default) means every event; a type no event has is a 400',
  examples: [['order.*', 'invoice.created']],
});

export const WebhookEndpointResponse = Type.Object(
  {
    id: Type.String({ examples: ['we_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    url: Type.String(),
    description: Nullable(Type.String()),
    eventTypes: Type.Array(Type.String()),
    status: EndpointStatus,
    previousSecretExpiresAt: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'After a rotation, until when the previous secret signs too (its signature is sent beside the new one)',
      }),
    ),
    failingSince: Nullable(
      Type.String({
        format: 'date-time',
        description: 'When deliveries began to fail without a success since; the endpoint is paused after 5 days of it',
      }),
    ),
    lastSequence: Type.Integer({
      minimum: 0,
      description: 'Events up to this sequence have been queued for this endpoint',
    }),
    hidesMargin: Type.Boolean({
      description: 'Deliveries leave out cost fields: a key without margin:read made or changed this endpoint',
    }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'WebhookEndpoint' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpointResponse>;

const Secret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
  description: 'The signing secret (Standard Webhooks): shown in this answer only; keep it safe',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3Ph3Vl9uX3s='],
});

export const WebhookEndpointWithSecret = Type.Object(
  {
    ...WebhookEndpointResponse.properties,
    secret: Secret,
  },
  { title: 'WebhookEndpointWithSecret' },
);

export const CreateWebhookEndpointBody = Type.Object(
  {
    url: Url,
    description: Type.Optional(Nullable(Text(500, 'What the endpoint is for'))),
    eventTypes: Type.Optional(EventTypes),
    status: Type.Optional(
      Type.Enum(['enabled', 'paused'], { description: 'enabled (the default), or paused to start it later' }),
    ),
  },
  {
    title: 'CreateWebhookEndpoint',
    additionalProperties: false,
    examples: [
      {
        url: 'https://erp.example.com/hooks/supplyline',
        description: 'ERP order sync',
        eventTypes: ['order.*', 'invoice.created'],
      },
    ],
  },
);
export type CreateWebhookEndpointInput = Static<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Nullable(Text(500, 'What the endpoint is for'))),
    eventTypes: Type.Optional(EventTypes),
    status: Type.Optional(EndpointStatus),
  },
  { title: 'UpdateWebhookEndpoint', additionalProperties: false, minProperties: 1, examples: [{ status: 'paused' }] },
);
export type UpdateWebhookEndpointInput = Static<typeof UpdateWebhookEndpointBody>;

export const WebhookEndpointParams = Type.Object({ id: Id('Webhook endpoint id', 'we_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const ListWebhookEndpointsQuery = Type.Object(PageQuery, { additionalProperties: false });

export const WebhookEndpointPage = ListEnvelope(WebhookEndpointResponse, 'WebhookEndpointPage');

export const RotateSecretBody = Type.Object(
  {
    gracePeriodSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 86_400,
        default: 86_400,
        description:
          'How long the previous secret keeps signing beside the new one (0 to 604800 seconds, 24 hours by default)',
      }),
    ),
  },
  { title: 'RotateWebhookSecret', additionalProperties: false, examples: [{ gracePeriodSeconds: 3600 }] },
);

const Sequence = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

export const ReplayBody = Type.Object(
  {
    afterSequence: Sequence('Replay events with a sequence above this one'),
    untilSequence: Sequence('... up to and including this one (at most the latest event)'),
  },
  {
    title: 'ReplayWebhookEvents',
    additionalProperties: false,
    examples: [{ afterSequence: 1200, untilSequence: 1450 }],
  },
);

export const ReplayResponse = Type.Object(
  {
    id: Type.String({ examples: ['whr_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    endpointId: Type.String(),
    afterSequence: Type.Integer({ minimum: 0 }),
    untilSequence: Type.Integer({ minimum: 0 }),
    createdAt: Type.String({ format: 'date-time' }),
    endpointStatus: Type.Enum([...ENDPOINT_STATUSES], {
      description:
        "The endpoint's status now: a paused endpoint holds what is queued until it is enabled; a disabled one sends nothing",
    }),
  },
  { title: 'WebhookReplay' },
);

export const TestResponse = Type.Object(
  {
    deliveryId: Type.String({
      description: 'The test delivery; follow it in the delivery log',
      examples: ['whd_01jd5x8m2k3n4p5q6r7s8t9v0w'],
    }),
    eventId: Type.String({ examples: ['evt_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    endpointStatus: Type.Enum([...ENDPOINT_STATUSES], {
      description:
        "The endpoint's status now: a paused endpoint holds what is queued until it is enabled; a disabled one sends nothing",
    }),
  },
  { title: 'WebhookTest' },
);

const Attempt = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1, description: 'Counts from 1' }),
    attemptedAt: Type.String({ format: 'date-time' }),
    responseStatus: Nullable(
      Type.Integer({ description: "The receiver's status; null when none came (refused, timed out, unreachable)" }),
    ),
    latencyMs: Type.Integer({ minimum: 0 }),
    responseBody: Nullable(Type.String({ description: 'The first 1 KiB of the response body' })),
    error: Nullable(Type.String({ description: 'Why no answer came, or why it counts as a failure' })),
    nextAttemptAt: Nullable(
      Type.String({ format: 'date-time', description: 'When the next attempt is due; null when this was the last' }),
    ),
  },
  { title: 'WebhookAttempt' },
);

export const DeliveryResponse = Type.Object(
  {
    id: Type.String({ examples: ['whd_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    eventId: Type.String(),
    eventType: Type.String(),
    sequence: Nullable(Type.Integer({ minimum: 1, description: "The event's sequence; null for a test event" })),
    replay: Type.Boolean({ description: 'Queued by a replay' }),
    status: Type.Enum([...DELIVERY_STATUSES], {
      description:
        'queued: waits for an earlier event of the same resource; pending: due at nextAttemptAt; delivering; ' +
        'succeeded; failed: every attempt failed; cancelled: the endpoint was disabled or deleted',
    }),
    attemptCount: Type.Integer({ minimum: 0 }),
    nextAttemptAt: Nullable(Type.String({ format: 'date-time' })),
    createdAt: Type.String({ format: 'date-time' }),
    attempts: Type.Array(Attempt),
  },
  { title: 'WebhookDelivery' },
);

export const ListDeliveriesQuery = Type.Object(
  {
    status: Type.Optional(Type.Enum([...DELIVERY_STATUSES], { description: 'Only deliveries in this state' })),
    after: Type.Optional(
      Id('Continue after this delivery id (the last of the previous page)', 'whd_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    ),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100' }),
  },
  { additionalProperties: false },
);

export const DeliveryPage = Type.Object(
  {
    items: Type.Array(DeliveryResponse),
    hasMore: Type.Boolean(),
    endpointStatus: Type.Enum([...ENDPOINT_STATUSES], {
      description:
        "The endpoint's status now: a paused endpoint holds what is queued until it is enabled; a disabled one sends nothing",
    }),
  },
  { title: 'WebhookDeliveryPage' },
);
