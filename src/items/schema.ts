import { Type, type Static } from 'typebox';
import {
  Currency, DateTime, Decimal, Id, ListEnvelope, Money, Nullable, PageQuery, Properties, PropertyFilterQuery, Text,
} from '../http/schema.ts';

export const ITEM_STATUSES = ['ACTIVE', 'DRAFT', 'ARCHIVED'] as const;
export const ItemStatus = Type.Enum([...ITEM_STATUSES], { description: 'Writable item status; DELETED is set only by DELETE' });
const ItemType = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{0,63}$', description: 'Item type in upper case, e.g. OTHER', examples: ['OTHER'],
});
const Handle = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$',
  description: 'URL-safe handle, unique among the business\'s live items; made from the name when left out',
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

export const CreateVariant = Type.Object({
  ...variantFields,
  variantName: Type.Optional({ ...variantFields.variantName, default: 'Default' }),
  sku: Type.Optional(variantFields.sku),
  barcode: Type.Optional(variantFields.barcode),
  cost: Type.Optional(variantFields.cost),
  weight: Type.Optional(variantFields.weight),
  unitOfMeasure: Type.Optional(variantFields.unitOfMeasure),
  sequence: Type.Optional(variantFields.sequence),
  properties: Type.Optional(variantFields.properties),
}, { additionalProperties: false });

export const UpdateVariant = Type.Object({
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
}, { additionalProperties: false });

const itemFields = {
  description: Type.Optional(Nullable(Text(10_000, 'Long description'))),
  imgUrl: Type.Optional(Nullable(Type.String({ format: 'uri', maxLength: 2048, description: 'Image address' }))),
  customType: Type.Optional(Nullable(Text(255, 'A type of the supplier\'s own'))),
  brand: Type.Optional(Nullable(Text(255, 'Brand'))),
  vendorName: Type.Optional(Nullable(Text(255, 'Vendor name'))),
  status: Type.Optional(ItemStatus),
};

export const CreateItemBody = Type.Object({
  item: Type.Object({
    name: Text(255, 'Item name', 1),
    handle: Type.Optional(Handle),
    type: Type.Optional({ ...ItemType, default: 'OTHER' }),
    ...itemFields,
    status: Type.Optional({ ...ItemStatus, default: 'ACTIVE' }),
    properties: Type.Optional(Nullable(Properties)),
  }, { additionalProperties: false }),
  variants: Type.Array(CreateVariant, { minItems: 1, maxItems: 100, description: 'At least one variant' }),
}, { additionalProperties: false });
export type CreateItemInput = Static<typeof CreateItemBody>;
export type CreateVariantInput = Static<typeof CreateVariant>;

export const UpdateItemBody = Type.Object({
  name: Type.Optional(Text(255, 'Item name', 1)),
  ...itemFields,
  properties: Type.Optional(Properties),
  createVariants: Type.Optional(Type.Array(CreateVariant, { maxItems: 100 })),
  updateVariants: Type.Optional(Type.Array(UpdateVariant, { maxItems: 100 })),
  deleteVariants: Type.Optional(Type.Array(Id('Variant id', 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'), { maxItems: 100 })),
}, { additionalProperties: false });
export type UpdateItemInput = Static<typeof UpdateItemBody>;
export type UpdateVariantInput = Static<typeof UpdateVariant>;

export const CreateItemResponse = Type.Object({
  success: Type.Literal(true),
  id: Type.String({ description: 'The new item id (itm_)' }),
  variantIds: Type.Array(Type.String(), { description: 'Variant ids (var_), in the order the variants were sent' }),
});

export const VariantResponse = Type.Object({
  id: Type.String(),
  itemId: Type.String(),
  variantName: Type.String(),
  sku: Nullable(Type.String()),
  barcode: Nullable(Type.String()),
  currency: Type.String(),
  price: Type.Number(),
  cost: Nullable(Type.Number()),
  weight: Nullable(Type.Number()),
  unitOfMeasure: Nullable(Type.String()),
  sequence: Type.Integer(),
  properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  deletedAt: Nullable(Type.String({ format: 'date-time' })),
});

export const ItemResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  description: Nullable(Type.String()),
  imgUrl: Nullable(Type.String()),
  customType: Nullable(Type.String()),
  brand: Nullable(Type.String()),
  vendorName: Nullable(Type.String()),
  type: Type.String(),
  status: Type.String({ description: 'ACTIVE, DRAFT, ARCHIVED or DELETED' }),
  properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  deletedAt: Nullable(Type.String({ format: 'date-time' })),
  variants: Type.Array(VariantResponse, { description: 'Live variants in sequence order (deleted ones too in a list with includeDeleted=true)' }),
});
export type Item = Static<typeof ItemResponse>;
export type Variant = Static<typeof VariantResponse>;

export const ListItemsQuery = Type.Object({
  ...PageQuery,
  updatedSince: Type.Optional(DateTime('Only items updated strictly after this time')),
  status: Type.Optional(Type.Enum([...ITEM_STATUSES, 'DELETED'])),
  propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
  propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
  propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
}, { additionalProperties: false });
export type ListItemsInput = Static<typeof ListItemsQuery>;

export const ItemListResponse = ListEnvelope(ItemResponse);
