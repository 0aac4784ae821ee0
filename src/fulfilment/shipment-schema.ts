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
import { Decimal } from '../http/schema.ts';

const Positive = (description: string) => Decimal(description, 9, 6, { exclusiveMinimum: 0, examples: [20] });

/** IN_TRANSIT when recorded; PATCH moves it among the first three freely; DELETE voids it. */
export const SHIPMENT_STATUSES = ['IN_TRANSIT', 'DELIVERED', 'RETURNED', 'VOIDED'] as const;
export const ShipmentStatus = Type.Enum([...SHIPMENT_STATUSES], {
  title: 'ShipmentStatus',
  description: 'IN_TRANSIT when recorded; PATCH sets IN_TRANSIT, DELIVERED or RETURNED; DELETE voids (VOIDED)',
});
const PatchStatus = Type.Enum(['IN_TRANSIT', 'DELIVERED', 'RETURNED'], { title: 'ShipmentPatchStatus' });

const ShipmentLine = Type.Object(
  {
    orderItemId: Id('An item of the shipment’s order', 'oi_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    quantity: Positive('Quantity shipped; a fraction only where the line was ordered with one'),
  },
  { title: 'ShipmentLine', additionalProperties: false },
);
const Lines = (description: string) => Type.Array(ShipmentLine, { minItems: 1, maxItems: 1000, description });

const Sscc = Type.String({
  pattern: '^[0-9]{18}$',
  description: 'GS1 Serial Shipping Container Code: 18 digits, the last a GS1 mod-10 check digit',
  examples: ['000123456000000012'],
});
const Weight = Type.Object(
  { value: Positive('Gross weight'), unit: Type.Enum(['kg', 'g', 'lb', 'oz']) },
  { title: 'PackageWeight', additionalProperties: false },
);
const Length = Positive('A side');
const Dimensions = Type.Object(
  { length: Length, width: Length, height: Length, unit: Type.Enum(['mm', 'cm', 'm', 'in', 'ft']) },
  { title: 'PackageDimensions', additionalProperties: false },
);
const TrackingNumber = Text(64, 'A carrier tracking number', 1);

export const PackageInput = Type.Object(
  {
    sscc: Type.Optional(Nullable(Sscc)),
    trackingNumber: Type.Optional(Nullable(TrackingNumber)),
    weight: Type.Optional(Nullable(Weight)),
    dimensions: Type.Optional(Nullable(Dimensions)),
    lines: Lines('What the package holds'),
  },
  { title: 'ShipmentPackageInput', additionalProperties: false },
);

const Carrier = Type.Object(
  {
    name: Text(100, 'The carrier’s name', 1),
    scac: Type.Optional(
      Nullable(
        Type.String({ pattern: '^[A-Z]{2,4}$', description: 'Standard Carrier Alpha Code, 2–4 capital letters' }),
      ),
    ),
  },
  { title: 'Carrier', additionalProperties: false },
);
const editable = {
  carrier: Type.Optional(Nullable(Carrier)),
  service: Type.Optional(Nullable(Text(100, 'The carrier’s service level, e.g. "Ground"'))),
  trackingNumbers: Type.Optional(Type.Array(TrackingNumber, { maxItems: 100, uniqueItems: true })),
  expectedDeliveryAt: Type.Optional(Nullable(DateTime('When the buyer should receive it'))),
  externalReference: Type.Optional(Nullable(Text(255, 'Your reference, e.g. the warehouse’s dispatch number'))),
};

export const CreateShipmentBody = Type.Object(
  {
    shippedAt: Type.Optional(DateTime('When it left; default now')),
    ...editable,
    properties: Type.Optional(Nullable(Properties)),
    packages: Type.Optional(Type.Array(PackageInput, { minItems: 1, maxItems: 1000 })),
    lines: Type.Optional(Lines('What shipped, for a shipment without packages; not with packages')),
  },
  {
    title: 'CreateShipmentBody',
    additionalProperties: false,
    description:
      'Either packages (each with its lines) or lines. For each order line, what shipments not voided hold may not exceed ' +
      'the ordered quantity less what the current acknowledgement rejected (409 otherwise)',
    examples: [
      {
        carrier: { name: 'UPS', scac: 'UPSN' },
        trackingNumbers: ['1Z999AA10123456784'],
        packages: [
          {
            sscc: '000123456000000012',
            weight: { value: 12.5, unit: 'kg' },
            lines: [{ orderItemId: 'oi_01jd5x8m2k3n4p5q6r7s8t9v0w', quantity: 20 }],
          },
        ],
      },
    ],
  },
);
export type CreateShipmentInput = Static<typeof CreateShipmentBody>;
export type ShipmentLineT = Static<typeof ShipmentLine>;

export const UpdateShipmentBody = Type.Object(
  {
    ...editable,
    status: Type.Optional(PatchStatus),
    deliveredAt: Type.Optional(
      Nullable(
        DateTime('When it arrived; DELIVERED without it takes now (unless DELIVERED already); IN_TRANSIT has none'),
      ),
    ),
    properties: Type.Optional(Properties),
  },
  {
    title: 'UpdateShipmentBody',
    additionalProperties: false,
    minProperties: 1,
    description:
      'A missing key leaves the field unchanged; null clears it; properties are deep-merged. Contents do not change: void and record again',
    examples: [{ status: 'DELIVERED', deliveredAt: '2030-01-16T09:00:00.000Z' }],
  },
);
export type UpdateShipmentInput = Static<typeof UpdateShipmentBody>;

const DateTimeOut = Type.String({ format: 'date-time' });
const LineOut = Type.Object({ orderItemId: Type.String(), quantity: Type.Number() }, { title: 'ShipmentLineOut' });

export const ShipmentResponse = Type.Object(
  {
    id: Type.String({ examples: ['shp_01jd5x8m2k3n4p5q6r7s8t9v0w'] }),
    orderId: Type.String(),
    status: ShipmentStatus,
    shippedAt: DateTimeOut,
    deliveredAt: Nullable(DateTimeOut),
    expectedDeliveryAt: Nullable(DateTimeOut),
    carrier: Nullable(Type.Object({ name: Type.String(), scac: Nullable(Type.String()) })),
    service: Nullable(Type.String()),
    trackingNumbers: Type.Array(Type.String()),
    externalReference: Nullable(Type.String()),
    properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
    packages: Type.Array(
      Type.Object(
        {
          sscc: Nullable(Type.String()),
          trackingNumber: Nullable(Type.String()),
          weight: Nullable(Type.Object({ value: Type.Number(), unit: Type.String() })),
          dimensions: Nullable(
            Type.Object({ length: Type.Number(), width: Type.Number(), height: Type.Number(), unit: Type.String() }),
          ),
          lines: Type.Array(LineOut),
        },
        { title: 'ShipmentPackage' },
      ),
    ),
    lines: Type.Array(LineOut, { description: 'What the shipment holds per order item: its packages’ lines added up' }),
    version: Type.Integer({ description: 'Raised by every change; the ETag carries it' }),
    createdAt: DateTimeOut,
    updatedAt: DateTimeOut,
    voidedAt: Nullable(DateTimeOut),
  },
  { title: 'Shipment' },
);
export type Shipment = Static<typeof ShipmentResponse>;
export type ShipmentPackage = Shipment['packages'][number];

export const ShipmentParams = Type.Object({ id: Id('Shipment id', 'shp_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const ListShipmentsQuery = Type.Object(
  {
    ...PageQuery,
    orderId: Type.Optional(Id('Only shipments of this order', 'ord_01jd5x8m2k3n4p5q6r7s8t9v0w')),
    status: Type.Optional({ ...ShipmentStatus, description: 'Only shipments with this status' }),
    createdSince: Type.Optional(DateTime('Only shipments created strictly after this time')),
    modifiedSince: Type.Optional(DateTime('Only shipments created or updated strictly after this time')),
    propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
    propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
    propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
  },
  { additionalProperties: false },
);
export const OrderShipmentsQuery = Type.Object(PageQuery, { additionalProperties: false });

export const ShipmentListResponse = ListEnvelope(ShipmentResponse, 'ShipmentPage');
