import { Type, type Static } from 'typebox';
import {
  DateTime,
  Id,
  ListEnvelope,
  Nullable,
  PageQuery,
  Properties,
  PropertyFilterQuery,
  Text,
} from '../http/schema.ts';

/** The reference's invoice statuses; they move freely, like order phases (no invented transitions). */
export const INVOICE_STATUSES = [
  'DELETED',
  'DRAFT',
  'AUTHORISED',
  'PARTIALLY_PAID',
  'PAID',
  'OVERPAID',
  'OVERDUE',
  'VOIDED',
  'DEFAULTED',
  'CREDITED',
  'REFUNDED',
] as const;

export const InvoiceStatus = Type.Enum([...INVOICE_STATUSES], {
  title: 'InvoiceStatus',
  description:
    'Invoice status (reference values); moves freely. A VOIDED invoice frees its order for a new invoice. ' +
    'DELETED is a status like the others, not a soft delete: such an invoice is still fetched and listed',
  examples: ['PAID'],
});

const Reference = Text(255, "The invoice reference, e.g. the accounting system's number");
const Notes = Text(10_000, 'Free-text notes');
const InvoiceId = Id('Invoice id', 'inv_01jd5x8m2k3n4p5q6r7s8t9v0w');

export const InvoiceParams = Type.Object({ id: InvoiceId });

export const CreateInvoiceBody = Type.Object(
  {
    orderId: Id('The live order to invoice; its items become the line items', 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    shipmentId: Type.Optional(
      Id(
        "A shipment of the order, not voided: the invoice bills its quantities at the order's prices. " +
          'One live invoice per shipment; none beside a live invoice of the whole order',
        'shp_01jd5x8m2k3n4p5q6r7s8t9v0w',
      ),
    ),
    reference: Type.Optional(Nullable(Reference)),
    notes: Type.Optional(Nullable(Notes)),
    dueAt: Type.Optional(Nullable(DateTime('When payment is due'))),
    properties: Type.Optional(Nullable(Properties)),
  },
  {
    title: 'CreateInvoiceBody',
    additionalProperties: false,
    examples: [{ orderId: 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w', reference: 'PO-1234', dueAt: '2025-02-15T00:00:00.000Z' }],
  },
);
export type CreateInvoiceInput = Static<typeof CreateInvoiceBody>;

export const UpdateInvoiceBody = Type.Object(
  {
    status: Type.Optional(InvoiceStatus),
    reference: Type.Optional(Nullable(Reference)),
    notes: Type.Optional(Nullable(Notes)),
    dueAt: Type.Optional(Nullable(DateTime('When payment is due'))),
    properties: Type.Optional({
      ...Properties,
      examples: [{ xero: { invoiceId: '243216c5-369e-4056-ac67-05388f86dc81' } }],
    }),
  },
  {
    title: 'UpdateInvoiceBody',
    additionalProperties: false,
    minProperties: 1,
    description:
      "A missing key leaves the field unchanged; null clears it. properties are deep-merged, exactly like an order's",
    examples: [{ status: 'PAID', properties: { xero: { invoiceId: '243216c5-369e-4056-ac67-05388f86dc81' } } }],
  },
);
export type UpdateInvoiceInput = Static<typeof UpdateInvoiceBody>;

const DateTimeOut = Type.String({ format: 'date-time' });
const AmountOut = (description: string, example: string) =>
  Type.String({ description: `${description}, decimal as a string`, examples: [example] });

export const InvoiceLineItemResponse = Type.Object(
  {
    id: Type.String({ examples: ['ili_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    invoiceId: Type.String(),
    orderItemId: Type.String({ description: 'The order item this line was copied from' }),
    itemVariantId: Type.String(),
    description: Type.String({ description: 'Item name and variant name', examples: ['Widget - Small'] }),
    quantity: Type.Number({ examples: [3] }),
    unitAmount: AmountOut('Unit price copied from the order item', '12.50'),
    lineAmount: AmountOut('quantity × unitAmount', '37.50'),
    currency: Type.String({ examples: ['AUD'] }),
    lineNumber: Type.Integer({ description: "The order item's line number" }),
    createdAt: DateTimeOut,
    updatedAt: DateTimeOut,
  },
  { title: 'InvoiceLineItem' },
);

export const InvoiceResponse = Type.Object(
  {
    id: Type.String({ examples: ['inv_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    invoiceNumber: Type.String({ description: 'Per-business sequence', examples: ['INV-000001'] }),
    partnershipId: Type.String(),
    orderId: Type.String(),
    shipmentId: Nullable(Type.String({ description: 'The shipment it bills, or null for the whole order' })),
    status: InvoiceStatus,
    reference: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    dueAt: Nullable(DateTimeOut),
    currency: Type.String(),
    totalAmount: AmountOut('Sum of the line amounts', '37.50'),
    properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
    version: Type.Integer({ description: 'Raised by every change; the ETag carries it' }),
    createdAt: DateTimeOut,
    updatedAt: DateTimeOut,
    deletedAt: Nullable({
      ...DateTimeOut,
      description: 'Always null: invoices are not soft-deleted through the API (status DELETED is a status)',
    }),
    invoiceLineItems: Type.Array(InvoiceLineItemResponse),
  },
  { title: 'Invoice' },
);
export type Invoice = Static<typeof InvoiceResponse>;
export type InvoiceLineItem = Static<typeof InvoiceLineItemResponse>;

export const ListInvoicesQuery = Type.Object(
  {
    ...PageQuery,
    createdSince: Type.Optional(DateTime('Only invoices created strictly after this time')),
    status: Type.Optional({
      ...InvoiceStatus,
      description: 'Only invoices with this status (DELETED included: it is a status)',
    }),
    hasArtefact: Type.Optional(
      Type.Boolean({
        description: 'true: properties.invoiceArtefact exists; false: it is absent. Ignored when propertyPath is given',
      }),
    ),
    propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
    propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
    propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
    includeDeleted: Type.Optional(
      Type.Boolean({
        deprecated: true,
        description:
          'Deprecated, taken until its sunset: true also lists invoice rows an operator marked deleted. Invoices have no soft ' +
          'delete in the API (DELETED is a status: filter with status=DELETED). Answered with Deprecation and Sunset headers',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListInvoicesInput = Static<typeof ListInvoicesQuery>;

export const InvoiceListResponse = ListEnvelope(InvoiceResponse, 'InvoicePage');
