import { Type, type Static } from 'typebox';
import { ID_PATTERN } from '../lib/ids.ts';
import { EVENT_TYPES } from '../log/events.ts';

export const RESOURCE_TYPES = [
  'order',
  'item',
  'buyer',
  'price_list',
  'invoice',
  'api_key',
  'webhook_endpoint',
  'user',
  'shipment',
] as const;

/** Every event type, `order.created` and so on (src/log/events.ts). */
export const ALL_EVENT_TYPES: readonly string[] = Object.entries(EVENT_TYPES).flatMap(([resource, actions]) =>
  actions.map((action) => `${resource}.${action}`),
);

/**
 * Of event types as filters name them (`order.updated`, `order.*`, or `*` where every type is
 * meant), the first that no event can have, with why: a typo would otherwise filter out everything,
 * and so would a resource's action that only another resource has (`item.acknowledged`).
 */
export function unknownEventType(types: readonly string[]): string | undefined {
  const resources: readonly string[] = RESOURCE_TYPES;
  const unknown = types.find(
    (type) =>
      type !== '*' &&
      !ALL_EVENT_TYPES.includes(type) &&
      !(type.endsWith('.*') && resources.includes(type.slice(0, -2))),
  );
  return (
    unknown &&
    `Unknown event type ${unknown}: a type is <resource>.* (a resource of ${RESOURCE_TYPES.join(', ')}) ` +
      `or one of ${ALL_EVENT_TYPES.join(', ')}`
  );
}

/** `order.updated`, or `order.*` for every type of a resource. */
const TYPE_PATTERN = '[a-z_]{1,32}\\.(?:\\*|[a-z_]{1,32})';

const Sequence = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

export const EventPageQuery = {
  after: Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    default: 0,
    description:
      'Answer events with a sequence above this one: the lastSequence of the previous page (0 from the start)',
  }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000' }),
};

export const ListEventsQuery = Type.Object(
  {
    ...EventPageQuery,
    types: Type.Optional(
      Type.String({
        maxLength: 1000,
        pattern: `^${TYPE_PATTERN}(?:,${TYPE_PATTERN}){0,49}$`,
        description: 'Comma-separated event types; `order.*` matches every order event; a type no event has is a 400',
        examples: ['order.created,order.updated', 'invoice.*'],
      }),
    ),
    resourceType: Type.Optional(
      Type.Enum([...RESOURCE_TYPES], { description: 'Only events of this kind of resource' }),
    ),
    resourceId: Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Only events of this resource' })),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 30,
        description:
          'Long poll: when no event matches yet, hold the request up to this many seconds and answer as soon as one ' +
          'is committed (through any instance); an empty page when the time is up',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListEventsInput = Static<typeof ListEventsQuery>;

export const ResourceEventsQuery = Type.Object(EventPageQuery, { additionalProperties: false });

const Actor = Type.Object(
  {
    type: Type.Enum(['api_key', 'user', 'system'], { description: 'Who made the change' }),
    id: Type.String({
      description: 'The API key id, user id, or `supplyline`/`cli` for the service itself',
      examples: ['key_01jd5x8m2k3n4p5q6r7s8t9v0w'],
    }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'A name a person recognises, where there is one' }),
  },
  { title: 'EventActor' },
);

export const EventResponse = Type.Object(
  {
    id: Type.String({
      description: 'Unique id of the event (evt_): de-duplicate by it',
      examples: ['evt_01jd5x8m2k3n4p5q6r7s8t9v0w'],
    }),
    sequence: Sequence('Per business, from 1, without gaps: holding N events means holding 1..N'),
    type: Type.String({
      description:
        'order.created, order.updated, order.deleted, order.ingested, order.acknowledged, ' +
        'shipment.created, shipment.updated, shipment.voided, item.*, buyer.*, price_list.created, invoice.*, ' +
        'api_key.created, api_key.revoked, webhook_endpoint.created, .updated, .paused, .disabled, .deleted, ' +
        'user.created, user.updated, user.password_changed, user.password_reset, api_key.updated',
      examples: ['order.updated'],
    }),
    resourceType: Type.Enum([...RESOURCE_TYPES]),
    resourceId: Type.String({ examples: ['ord_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    resourceVersion: Type.Integer({
      minimum: 1,
      description: "Counts the resource's events from 1: an event with a lower one than already applied is stale",
    }),
    occurredAt: Type.String({ format: 'date-time' }),
    actor: Actor,
    requestId: Type.Union([Type.String(), Type.Null()], {
      description: 'The X-Request-Id of the write, null for the CLI and the service itself',
    }),
    idempotencyKey: Type.Union([Type.String(), Type.Null()], {
      description: 'The Idempotency-Key the write was sent with, if any',
    }),
    livemode: Type.Boolean({
      description: "False for a sandbox's events (test keys, `sl_test_`), true for a live business's",
    }),
    data: Type.Object({
      object: Type.Record(Type.String(), Type.Unknown(), {
        description: 'The resource as its GET returned it right after the change',
      }),
      changes: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          description:
            'On updates: each changed field, or property path (`properties.erp.no`), as {from, to}: a path that came ' +
            'has no `from`, one that went has no `to`, and `null` is a value a path held; lists of child ' +
            'records (orderItems, variants, emails, ...) as {created, updated: [{id, changes}], deleted: [ids]}',
        }),
      ),
    }),
  },
  { title: 'Event' },
);
export type Event = Static<typeof EventResponse>;

export const EventPageResponse = Type.Object(
  {
    items: Type.Array(EventResponse),
    lastSequence: Sequence(
      'Ask for after=lastSequence next: the last event this page looked at (filters may have skipped some)',
    ),
    hasMore: Type.Boolean({ description: 'More events after lastSequence matched when this page was read' }),
  },
  { title: 'EventPage' },
);

/** A 410 answer: the range asked for starts below the retained events; the message names the oldest retained sequence. */
export const eventsAheadResponse = (field: string) =>
  Type.Unsafe<unknown>({
    $ref: 'ErrorResponse#',
    description: `\`${field}\` is past the business's latest event (a sequence of another business, or of a database since restored)`,
  });

export const eventsGoneResponse = (field: string) =>
  Type.Unsafe<unknown>({
    $ref: 'ErrorResponse#',
    description: `\`${field}\` is below the retained events; the message names the oldest retained sequence`,
  });
