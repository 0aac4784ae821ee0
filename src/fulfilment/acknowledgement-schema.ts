import { Type, type Static } from 'typebox';
import { DateTime, Decimal, Id, Money, Nullable, Text } from '../http/schema.ts';
import { AcknowledgementDecision, OrderPhase } from '../orders/schema.ts';

/** What the supplier decides for one line; docs/fulfilment.md maps each to its X12 855 line code. */
export const LINE_DECISIONS = [
  'ACCEPTED',
  'REJECTED',
  'QUANTITY_CHANGED',
  'BACKORDERED',
  'SUBSTITUTED',
  'PRICE_CHANGED',
  'RESCHEDULED',
  'HELD',
] as const;
export type LineDecision = (typeof LINE_DECISIONS)[number];

const LineDecisionSchema = Type.Enum([...LINE_DECISIONS], {
  title: 'AcknowledgementLineDecision',
  description:
    'ACCEPTED (X12 IA), REJECTED (IR), QUANTITY_CHANGED (IQ), BACKORDERED (IB), SUBSTITUTED (IS), ' +
    'PRICE_CHANGED (IP), RESCHEDULED (DR), HELD (IH)',
});

export const FulfilmentQuantity = Decimal(
  'Quantity in the line’s unit of measure; a fraction only where the line was ordered with one',
  9,
  6,
  { examples: [40] },
);

export const AcknowledgementLineInput = Type.Object(
  {
    orderItemId: Id('An item of this order', 'oi_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    decision: LineDecisionSchema,
    quantity: Type.Optional({
      ...FulfilmentQuantity,
      description:
        'The quantity accepted: required for QUANTITY_CHANGED (above 0 and below the ordered quantity), 0 for REJECTED, ' +
        'otherwise the ordered quantity, which is also the default',
    }),
    price: Type.Optional(Money('The new unit price: required for PRICE_CHANGED')),
    substituteVariantId: Type.Optional(
      Id('The variant shipped instead: required for SUBSTITUTED', 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    ),
    expectedAt: Type.Optional(DateTime('When the line will ship: required for RESCHEDULED')),
    reason: Type.Optional(Nullable(Text(1000, 'Why, in words'))),
    reasonCode: Type.Optional(Nullable(Text(32, "A code of the buyer's routing guide", 1))),
  },
  { title: 'AcknowledgementLineInput', additionalProperties: false },
);
export type AcknowledgementLineInputT = Static<typeof AcknowledgementLineInput>;

export const CreateAcknowledgementBody = Type.Object(
  {
    lines: Type.Optional(
      Type.Array(AcknowledgementLineInput, {
        maxItems: 1000,
        description: 'Decisions for some lines; each line not named is accepted as ordered',
      }),
    ),
    phase: Type.Optional(OrderPhase),
    notes: Type.Optional(Nullable(Text(10_000, 'Free-text notes to the buyer'))),
  },
  {
    title: 'CreateAcknowledgementBody',
    additionalProperties: false,
    description: 'An acknowledgement of the whole order; `phase` sets the order’s phase in the same write',
    examples: [
      {
        phase: 'ACTIVE',
        lines: [{ orderItemId: 'oi_01jd5x8m2k3n4p5q6r7s8t9v0w', decision: 'QUANTITY_CHANGED', quantity: 40 }],
      },
    ],
  },
);
export type CreateAcknowledgementInput = Static<typeof CreateAcknowledgementBody>;

const DateTimeOut = Type.String({ format: 'date-time' });

export const AcknowledgementLineResponse = Type.Object(
  {
    orderItemId: Type.String(),
    lineNumber: Type.Integer(),
    decision: LineDecisionSchema,
    orderedQuantity: Type.Number(),
    quantity: Type.Number({ description: 'The quantity accepted' }),
    price: Nullable(Type.String({ description: 'The new unit price (PRICE_CHANGED), decimal as a string' })),
    substituteVariantId: Nullable(Type.String()),
    expectedAt: Nullable(DateTimeOut),
    reason: Nullable(Type.String()),
    reasonCode: Nullable(Type.String()),
  },
  { title: 'AcknowledgementLine' },
);

export const AcknowledgementResponse = Type.Object(
  {
    id: Type.String({ examples: ['ack_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    orderId: Type.String(),
    decision: AcknowledgementDecision,
    phase: Nullable(OrderPhase),
    notes: Nullable(Type.String()),
    decidedAt: DateTimeOut,
    lines: Type.Array(AcknowledgementLineResponse, {
      description: 'Every line of the order when decided, in line order',
    }),
  },
  { title: 'Acknowledgement' },
);
export type Acknowledgement = Static<typeof AcknowledgementResponse>;
export type AcknowledgementLine = Static<typeof AcknowledgementLineResponse>;

export const AcknowledgementListResponse = Type.Object(
  { items: Type.Array(AcknowledgementResponse) },
  { title: 'AcknowledgementList', description: 'Newest first; the first is the current one' },
);
