import { Type, type Static } from 'typebox';
import { DateTime, Id, ListEnvelope, Nullable, PageQuery } from '../http/schema.ts';

export const ListAuditEventsQuery = Type.Object(
  {
    ...PageQuery,
    keyId: Type.Optional(Id('Only what this API key did, and what was done to it', 'key_01jd5x8m2k3n4p5q6r7s8t9v0w')),
    kind: Type.Optional(
      Type.String({
        maxLength: 64,
        pattern: '^[a-z_]{1,32}\\.(?:\\*|[a-z_]{1,32})$',
        description:
          'One kind (`api_key.revoked`, `request.forbidden`), or every kind of one thing (`webhook_endpoint.*`)',
        examples: ['request.*'],
      }),
    ),
    since: Type.Optional(DateTime('Only what happened at or after this time')),
    until: Type.Optional(DateTime('Only what happened before this time')),
  },
  { additionalProperties: false },
);
export type ListAuditEventsInput = Static<typeof ListAuditEventsQuery>;

export const AuditEventResponse = Type.Object(
  {
    id: Type.String({ examples: ['aud_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    kind: Type.String({
      description:
        'A change (`api_key.created`, `.updated`, `.revoked`; `user.*`; `webhook_endpoint.*`), or a refused request: ' +
        '`request.unauthorized` (401) or `request.forbidden` (403)',
      examples: ['request.forbidden'],
    }),
    occurredAt: Type.String({ format: 'date-time' }),
    actor: Type.Object({
      type: Type.String({ description: 'api_key, user or system' }),
      id: Nullable(
        Type.String({
          description: 'The key, user or `supplyline`/`cli`; null for a refused request whose key is unknown',
        }),
      ),
    }),
    keyPrefix: Nullable(
      Type.String({
        description: "A refused request's key, by its first characters (never the key)",
        examples: ['sl_live_AbCd'],
      }),
    ),
    address: Nullable(Type.String({ description: "A refused request's client address" })),
    requestId: Nullable(Type.String()),
    method: Nullable(Type.String()),
    path: Nullable(Type.String()),
    reason: Nullable(
      Type.String({
        description: 'Why a request was refused',
        examples: ['This API key lacks the scope orders:write'],
      }),
    ),
    subjectId: Nullable(Type.String({ description: 'The key, user or webhook endpoint a change was made to' })),
    detail: Nullable(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'A change: its changes, or the record as created or removed',
      }),
    ),
  },
  { title: 'AuditEvent' },
);
export type AuditEvent = Static<typeof AuditEventResponse>;

export const AuditEventPage = ListEnvelope(AuditEventResponse, 'AuditEventPage');
