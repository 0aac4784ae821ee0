import { Type, type Static } from 'typebox';
import {
  Currency,
  DateTime,
  Decimal,
  Id,
  IncludeDeletedQuery,
  ListEnvelope,
  Money,
  Nullable,
  PageQuery,
  Properties,
  PropertyFilterQuery,
  Text,
  MARGIN_NOTE,
} from '../http/schema.ts';

export const ORDER_PHASES = ['DRAFT', 'PENDING', 'ACTIVE', 'ARCHIVED', 'REJECTED', 'CANCELLED', 'DELETED'] as const;
/** Contract 3.2: the values PATCH accepts and responses carry. */
export const ORDER_STATUSES = [
  'UNASSIGNED',
  'ACCEPTED',
  'PACKED',
  'IN_TRANSIT',
  'DELIVERED',
  'RETURNED',
  'NOT_APPLICABLE',
] as const;

/**
 * The contract's order guide names the status dimension with other values (3.2), which a list
 * takes as filters (earlier releases did): each means the stored status it describes, and
 * CANCELLED none, since no status is a cancellation (phase=CANCELLED lists cancelled orders).
 */
export const GUIDE_STATUSES = { PREPARING: 'PACKED', SHIPPED: 'IN_TRANSIT', CANCELLED: 'CANCELLED' } as const;

export const OrderPhase = Type.Enum([...ORDER_PHASES], {
  title: 'OrderPhase',
  description: 'High-level lifecycle (contract 3.1); moves freely. DELETED is set by a soft delete',
  examples: ['ACTIVE'],
});
export const OrderStatus = Type.Enum([...ORDER_STATUSES], {
  title: 'OrderStatus',
  description: 'Physical fulfilment (contract 3.2); moves freely',
  examples: ['ACCEPTED'],
});

const Quantity = Decimal('Quantity ordered (> 0)', 9, 6, { exclusiveMinimum: 0, examples: [3] });
const Amount = Money;
const LineNumber = Type.Integer({ minimum: 1, maximum: 100_000, description: 'Position on the order, from 1' });
const UnitOfMeasure = Text(32, 'Unit of measure, e.g. "EA" or "kg"', 1);
const EntryId = Id('An item list entry of this business', 'ile_01jd5x8m2k3n4p5q6r7s8t9v0w');
const OrderItemId = Id('Order item id', 'oi_01jd5x8m2k3n4p5q6r7s8t9v0w');

/** An acknowledgement's header decision, derived from its lines (src/fulfilment). */
export const ACKNOWLEDGEMENT_DECISIONS = ['ACCEPTED', 'ACCEPTED_WITH_CHANGES', 'REJECTED'] as const;
export const AcknowledgementDecision = Type.Enum([...ACKNOWLEDGEMENT_DECISIONS], {
  title: 'AcknowledgementDecision',
  description: 'ACCEPTED: every line as ordered; REJECTED: every line rejected; ACCEPTED_WITH_CHANGES otherwise',
});
export type AcknowledgementSummary = (typeof ACKNOWLEDGEMENT_DECISIONS)[number];

export const OrderParams = Type.Object({ id: Id('Order id', 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w') });
export const BuyerOrderParams = Type.Object({ id: Id('Buyer id (the phantom id)', 'phm_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const CreateOrderItem = Type.Object(
  {
    itemListEntryId: Type.Optional(EntryId),
    itemVariantId: Type.Optional(
      Id("A variant on the buyer's item list; resolved to its entry", 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    ),
    quantity: Quantity,
    unitOfMeasure: Type.Optional(UnitOfMeasure),
    price: Type.Optional(Amount("Unit price; the buyer's list price when left out")),
    cost: Type.Optional(Amount("Unit cost; the variant's cost times the list's cost factor when left out")),
    lineNumber: Type.Optional(LineNumber),
    properties: Type.Optional(Nullable(Properties)),
  },
  {
    title: 'CreateOrderItem',
    additionalProperties: false,
    description: 'Exactly one of itemListEntryId and itemVariantId; at most one item per item list entry',
    oneOf: [{ required: ['itemListEntryId'] }, { required: ['itemVariantId'] }],
  },
);

export const CreateOrderBody = Type.Object(
  {
    expectedDeliveryAt: DateTime('When the buyer expects delivery'),
    internalReference: Type.Optional(
      Text(255, "The supplier's order number; the next SO-000001 style number when left out", 1),
    ),
    externalReference: Type.Optional(Nullable(Text(255, "The buyer's purchase-order reference"))),
    notes: Type.Optional(Nullable(Text(10_000, 'Free-text notes'))),
    deliveryAddress: Type.Optional(Nullable(Text(2000, 'Delivery address, one free-text string'))),
    membershipId: Type.Optional(Nullable(Text(64, 'The member who placed the order'))),
    phase: Type.Optional({ ...OrderPhase, default: 'PENDING' }),
    status: Type.Optional({ ...OrderStatus, default: 'UNASSIGNED' }),
    currency: Type.Optional({ ...Currency, description: "Must equal the items' currency when sent" }),
    properties: Type.Optional(Nullable(Properties)),
    orderItems: Type.Array(CreateOrderItem, {
      minItems: 1,
      maxItems: 500,
      description: 'At least one item, one per item list entry',
    }),
  },
  {
    title: 'CreateOrderBody',
    additionalProperties: false,
    examples: [
      {
        expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
        externalReference: 'PO-1234',
        orderItems: [{ itemVariantId: 'var_01jd5x8m2k3n4p5q6r7s8t9v0w', quantity: 3 }],
      },
    ],
  },
);
export type CreateOrderInput = Static<typeof CreateOrderBody>;
export type CreateOrderItemInput = Static<typeof CreateOrderItem>;

const itemFields = {
  quantity: Quantity,
  unitOfMeasure: UnitOfMeasure,
  currency: Currency,
  price: Amount('Unit price'),
  cost: Amount('Unit cost'),
};

export const PatchCreateOrderItem = Type.Object(
  {
    itemListEntryId: EntryId,
    ...itemFields,
    lineNumber: Type.Optional(LineNumber),
    properties: Type.Optional(Nullable(Properties)),
  },
  {
    title: 'PatchCreateOrderItem',
    additionalProperties: false,
    description:
      "A new line for an item list entry the order does not have yet (GET /api/v1/pricing/{id} lists a list's entries; " +
      'every order item shows its itemListEntryId)',
  },
);

export const PatchUpdateOrderItem = Type.Object(
  {
    id: OrderItemId,
    quantity: Type.Optional(itemFields.quantity),
    unitOfMeasure: Type.Optional(itemFields.unitOfMeasure),
    currency: Type.Optional(itemFields.currency),
    price: Type.Optional(itemFields.price),
    cost: Type.Optional(itemFields.cost),
    lineNumber: Type.Optional(LineNumber),
    properties: Type.Optional(Properties),
  },
  {
    title: 'PatchUpdateOrderItem',
    additionalProperties: false,
    description: 'Changes to an existing line; properties are deep-merged',
  },
);

export const UpdateOrderBody = Type.Object(
  {
    order: Type.Optional(
      Type.Object(
        {
          phase: Type.Optional(OrderPhase),
          status: Type.Optional(OrderStatus),
          externalReference: Type.Optional(Nullable(Text(255, "The buyer's purchase-order reference"))),
          notes: Type.Optional(Nullable(Text(10_000, 'Free-text notes'))),
          deliveryAddress: Type.Optional(Nullable(Text(2000, 'Delivery address'))),
          expectedDeliveryAt: Type.Optional(DateTime('Expected delivery')),
          shippedBy: Type.Optional(Nullable(DateTime('Ship-by time'))),
          shippedAt: Type.Optional(Nullable(DateTime('When it was shipped'))),
          deliveredAt: Type.Optional(Nullable(DateTime('When it was delivered'))),
          currency: Type.Optional(Currency),
          totalAmount: Type.Optional(
            Decimal('Sets the total explicitly; otherwise it is recomputed when items change', 11, 4, {
              examples: [125.5],
            }),
          ),
          properties: Type.Optional(Properties),
        },
        { additionalProperties: false },
      ),
    ),
    createOrderItems: Type.Optional(Type.Array(PatchCreateOrderItem, { maxItems: 500 })),
    updateOrderItems: Type.Optional(Type.Array(PatchUpdateOrderItem, { maxItems: 500 })),
    deleteOrderItems: Type.Optional(Type.Array(OrderItemId, { maxItems: 500 })),
  },
  {
    title: 'UpdateOrderBody',
    additionalProperties: false,
    minProperties: 1,
    examples: [{ order: { phase: 'ACTIVE', status: 'ACCEPTED', properties: { sage200Evo: { salesOrderNo: 456 } } } }],
  },
);
export type UpdateOrderInput = Static<typeof UpdateOrderBody>;
export type PatchCreateOrderItemInput = Static<typeof PatchCreateOrderItem>;
export type PatchUpdateOrderItemInput = Static<typeof PatchUpdateOrderItem>;

export const IngestOrderBody = Type.Object(
  {
    orderId: Id('The order being announced', 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    businessId: Text(64, "The caller's own business id", 1),
  },
  {
    title: 'IngestOrderBody',
    additionalProperties: false,
    examples: [{ orderId: 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w', businessId: 'bus_1234567890abcdef' }],
  },
);

const DateTimeOut = Type.String({ format: 'date-time' });
const JsonObjectOut = Type.Record(Type.String(), Type.Unknown());

export const OrderItemResponse = Type.Object(
  {
    id: Type.String(),
    orderId: Type.String(),
    lineNumber: Type.Integer(),
    itemListEntryId: Type.String(),
    itemListEntry: Type.Object(
      {
        id: Type.String(),
        itemVariantId: Type.String(),
        itemVariant: Type.Object({
          id: Type.String(),
          itemId: Type.String(),
          variantName: Type.String(),
          sku: Nullable(Type.String()),
        }),
      },
      {
        description:
          'The item list entry and its variant as they were when the line was written: ' +
          'a later rename or SKU change leaves the order as it is',
      },
    ),
    quantity: Type.Number(),
    unitOfMeasure: Type.String(),
    currency: Type.String(),
    price: Type.String({ description: 'Decimal as a string', examples: ['12.50'] }),
    properties: Nullable(JsonObjectOut),
    createdAt: DateTimeOut,
    updatedAt: DateTimeOut,
    cost: Type.Optional(Type.String({ description: `Decimal as a string. ${MARGIN_NOTE}`, examples: ['4.00'] })),
  },
  { title: 'OrderItem' },
);

export const OrderResponse = Type.Object(
  {
    id: Type.String(),
    partnershipId: Type.String(),
    membershipId: Nullable(Type.String()),
    integrationId: Nullable(Type.String()),
    phase: OrderPhase,
    status: OrderStatus,
    internalReference: Type.String({ examples: ['SO-000001'] }),
    externalReference: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    deliveryAddress: Nullable(Type.String()),
    expectedDeliveryAt: DateTimeOut,
    deliveredAt: Nullable(DateTimeOut),
    shippedAt: Nullable(DateTimeOut),
    shippedBy: Nullable(DateTimeOut),
    currency: Type.String(),
    totalAmount: Type.String({ description: 'Sum of quantity × price, decimal as a string', examples: ['37.50'] }),
    properties: Nullable(JsonObjectOut),
    version: Type.Integer({ description: 'Raised by every change; the ETag carries it' }),
    createdAt: DateTimeOut,
    updatedAt: DateTimeOut,
    deletedAt: Nullable(DateTimeOut),
    acknowledgement: Nullable(
      Type.Object(
        {
          id: Type.String({ examples: ['ack_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
          decidedAt: DateTimeOut,
          summary: AcknowledgementDecision,
        },
        {
          title: 'OrderAcknowledgement',
          description:
            'The current acknowledgement (the latest): its header decision. Null until the supplier acknowledges',
        },
      ),
    ),
    orderItems: Type.Array(OrderItemResponse),
  },
  { title: 'Order' },
);
export type Order = Static<typeof OrderResponse>;
export type OrderItem = Static<typeof OrderItemResponse>;

export const ListOrdersQuery = Type.Object(
  {
    ...PageQuery,
    ...IncludeDeletedQuery,
    createdSince: Type.Optional(DateTime('Only orders created strictly after this time')),
    updatedSince: Type.Optional(DateTime('Only orders updated strictly after this time')),
    modifiedSince: Type.Optional(
      DateTime('Only orders created or updated strictly after this time; not with createdSince or updatedSince'),
    ),
    phase: Type.Optional(OrderPhase),
    status: Type.Optional(
      Type.Enum([...ORDER_STATUSES, ...(Object.keys(GUIDE_STATUSES) as Array<keyof typeof GUIDE_STATUSES>)], {
        title: 'OrderStatusFilter',
        description:
          "Only orders with this status. The order guide's values are taken too: PREPARING lists PACKED orders, SHIPPED lists " +
          'IN_TRANSIT ones, and CANCELLED none (no status is a cancellation; phase=CANCELLED lists cancelled orders)',
      }),
    ),
    propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
    propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
    propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
  },
  { additionalProperties: false },
);
export type ListOrdersInput = Static<typeof ListOrdersQuery>;

export const OrderListResponse = ListEnvelope(OrderResponse, 'OrderPage');
