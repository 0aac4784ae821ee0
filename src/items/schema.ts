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

export const ITEM_STATUSES = ['ACTIVE', 'DRAFT', 'ARCHIVED'] as const;
export const ItemStatus = Type.Enum([...ITEM_STATUSES], {
  title: 'ItemStatus',
  description: 'Writable item status; DELETED is set only by DELETE',
});
const ItemStatusOut = Type.Enum([...ITEM_STATUSES, 'DELETED'], {
  description: 'ACTIVE, DRAFT or ARCHIVED; DELETED after a soft delete',
});
const ItemType = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{0,63}$',
  description: 'Item type in upper case, e.g. OTHER',
  examples: ['OTHER'],
});
const Handle = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$',
  description: "URL-safe handle, unique among the business's live items; made from the name when left out",
  examples: ['blue-widget'],
});

const variantFields = {
  variantName: Text(255, 'Variant name; a single-variant item uses "Default"', 1),
  sku: Nullable(Text(255, 'Stock keeping unit')),
  barcode: Nullable(Text(255, 'Barcode (EAN, UPC, ...)')),
  currency: Currency,
  price: Money('Unit price'),
  cost: Nullable(Money('Unit cost')),
  weight: Nullable(Decimal('Weight, in unitOfMeasure when that is a weight unit', 9, 6)),
  unitOfMeasure: Nullable(Text(32, 'Unit of measure, e.g. "kg" or "EA"', 1)),
  sequence: Type.Integer({ minimum: 1, maximum: 100_000, description: 'Display order, from 1' }),
  properties: Nullable(Properties),
};

export const CreateVariant = Type.Object(
  {
    ...variantFields,
    variantName: Type.Optional({ ...variantFields.variantName, default: 'Default' }),
    sku: Type.Optional(variantFields.sku),
    barcode: Type.Optional(variantFields.barcode),
    cost: Type.Optional(variantFields.cost),
    weight: Type.Optional(variantFields.weight),
    unitOfMeasure: Type.Optional(variantFields.unitOfMeasure),
    sequence: Type.Optional(variantFields.sequence),
    properties: Type.Optional(variantFields.properties),
  },
  { title: 'CreateVariant', additionalProperties: false },
);

export const UpdateVariant = Type.Object(
  {
    id: Id('Variant id', 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    variantName: Type.Optional(variantFields.variantName),
    sku: Type.Optional(variantFields.sku),
    barcode: Type.Optional(variantFields.barcode),
    currency: Type.Optional(Currency),
    price: Type.Optional(variantFields.price),
    cost: Type.Optional(variantFields.cost),
    weight: Type.Optional(variantFields.weight),
    unitOfMeasure: Type.Optional(variantFields.unitOfMeasure),
    sequence: Type.Optional(variantFields.sequence),
    properties: Type.Optional(Properties),
  },
  {
    title: 'UpdateVariant',
    additionalProperties: false,
    description: 'Changes to an existing variant; properties are deep-merged',
  },
);

const itemFields = {
  description: Type.Optional(Nullable(Text(10_000, 'Long description'))),
  imgUrl: Type.Optional(Nullable(Type.String({ format: 'uri', maxLength: 2048, description: 'Image address' }))),
  customType: Type.Optional(Nullable(Text(255, "A type of the supplier's own"))),
  brand: Type.Optional(Nullable(Text(255, 'Brand'))),
  vendorName: Type.Optional(Nullable(Text(255, 'Vendor name'))),
  status: Type.Optional(ItemStatus),
};

export const CreateItemBody = Type.Object(
  {
    item: Type.Object(
      {
        name: Text(255, 'Item name', 1),
        handle: Type.Optional(Handle),
        type: Type.Optional({ ...ItemType, default: 'OTHER' }),
        ...itemFields,
        status: Type.Optional({ ...ItemStatus, default: 'ACTIVE' }),
        properties: Type.Optional(Nullable(Properties)),
      },
      { additionalProperties: false },
    ),
    variants: Type.Array(CreateVariant, { minItems: 1, maxItems: 100, description: 'At least one variant' }),
  },
  {
    title: 'CreateItemBody',
    additionalProperties: false,
    examples: [
      {
        item: { name: 'Green Tea 500g', type: 'OTHER', status: 'ACTIVE' },
        variants: [
          { variantName: 'Default', sku: 'TEA-500', currency: 'AUD', price: 12.5, cost: 4, unitOfMeasure: 'EA' },
        ],
      },
    ],
  },
);
export type CreateItemInput = Static<typeof CreateItemBody>;
export type CreateVariantInput = Static<typeof CreateVariant>;

export const UpdateItemBody = Type.Object(
  {
    name: Type.Optional(Text(255, 'Item name', 1)),
    ...itemFields,
    properties: Type.Optional(Properties),
    createVariants: Type.Optional(Type.Array(CreateVariant, { maxItems: 100 })),
    updateVariants: Type.Optional(Type.Array(UpdateVariant, { maxItems: 100 })),
    deleteVariants: Type.Optional(Type.Array(Id('Variant id', 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'), { maxItems: 100 })),
  },
  {
    title: 'UpdateItemBody',
    additionalProperties: false,
    minProperties: 1,
    examples: [{ description: 'Loose-leaf green tea', properties: { shopify: { productId: '8123' } } }],
  },
);
export type UpdateItemInput = Static<typeof UpdateItemBody>;
export type UpdateVariantInput = Static<typeof UpdateVariant>;

export const CreateItemResponse = Type.Object(
  {
    success: Type.Literal(true),
    id: Type.String({ description: 'The new item id (itm_)' }),
    variantIds: Type.Array(Type.String(), { description: 'Variant ids (var_), in the order the variants were sent' }),
  },
  { title: 'ItemCreated' },
);

export const VariantResponse = Type.Object(
  {
    id: Type.String(),
    itemId: Type.String(),
    variantName: Type.String(),
    sku: Nullable(Type.String()),
    barcode: Nullable(Type.String()),
    currency: Type.String(),
    price: Type.Number(),
    weight: Nullable(Type.Number()),
    unitOfMeasure: Nullable(Type.String()),
    sequence: Type.Integer(),
    properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    deletedAt: Nullable(Type.String({ format: 'date-time' })),
    cost: Type.Optional(Nullable(Type.Number({ description: MARGIN_NOTE }))),
  },
  { title: 'Variant' },
);

export const ItemResponse = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    handle: Type.String(),
    description: Nullable(Type.String()),
    imgUrl: Nullable(Type.String()),
    customType: Nullable(Type.String()),
    brand: Nullable(Type.String()),
    vendorName: Nullable(Type.String()),
    type: Type.String(),
    status: ItemStatusOut,
    properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    deletedAt: Nullable(Type.String({ format: 'date-time' })),
    variants: Type.Array(VariantResponse, {
      description: 'Live variants in sequence order (deleted ones too in a list with includeDeleted=true)',
    }),
  },
  { title: 'Item' },
);
export type Item = Static<typeof ItemResponse>;
export type Variant = Static<typeof VariantResponse>;

export const ListItemsQuery = Type.Object(
  {
    ...PageQuery,
    ...IncludeDeletedQuery,
    updatedSince: Type.Optional(DateTime('Only items updated strictly after this time')),
    status: Type.Optional({
      ...ItemStatusOut,
      description: 'Only items with this status; DELETED implies includeDeleted=true',
    }),
    propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
    propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
    propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
  },
  { additionalProperties: false },
);
export type ListItemsInput = Static<typeof ListItemsQuery>;

export const ItemListResponse = ListEnvelope(ItemResponse, 'ItemPage');
