import { Type, type Static } from 'typebox';
import {
  Currency,
  DateTime,
  Decimal,
  Id,
  ListEnvelope,
  Money,
  Nullable,
  PageQuery,
  Text,
  MARGIN_NOTE,
} from '../http/schema.ts';

/** Item list statuses: the contract names only ACTIVE; only an ACTIVE list prices anything. */
export const ITEM_LIST_STATUSES = ['ACTIVE', 'INACTIVE', 'DRAFT', 'ARCHIVED'] as const;
export const ItemListStatus = Type.Enum([...ITEM_LIST_STATUSES], {
  title: 'PriceListStatus',
  description: 'Only an ACTIVE list within its dates is applied; otherwise its buyers get the default list',
  examples: ['ACTIVE'],
});

const Factor = (description: string) =>
  Type.Unsafe<number>({
    ...Decimal(description, 7, 6, { exclusiveMinimum: 0, maximum: 1_000_000, examples: [1.1] }),
    default: 1,
  });

export const CreateItemListEntry = Type.Object(
  {
    itemVariantId: Id('A live variant of this business', 'var_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    overrideFlatPrice: Type.Optional(
      Nullable(Money('Fixed unit price for this variant; replaces price × globalPriceFactor')),
    ),
    currency: Type.Optional(
      Nullable({ ...Currency, description: "Currency of this entry; the variant's currency when left out" }),
    ),
  },
  { title: 'CreatePriceListEntry', additionalProperties: false },
);

export const CreatePriceListBody = Type.Object(
  {
    itemListData: Type.Object(
      {
        label: Text(255, 'Name of the price list', 1),
        status: Type.Optional({ ...ItemListStatus, default: 'ACTIVE' }),
        globalPriceFactor: Type.Optional(Factor('Multiplies the variant price of entries without an override (> 0)')),
        globalCostFactor: Type.Optional(Factor('Multiplies the variant cost (> 0)')),
        startDate: Type.Optional(Nullable(DateTime('The list applies from this time (inclusive)'))),
        endDate: Type.Optional(
          Nullable(DateTime('The list applies until this time (inclusive); not before startDate')),
        ),
      },
      { additionalProperties: false },
    ),
    entries: Type.Optional(
      Type.Array(CreateItemListEntry, {
        maxItems: 10_000,
        description: 'At most one entry per variant',
        default: [],
      }),
    ),
    partnerships: Type.Optional(
      Type.Array(Id('Partnership id of this business', 'prt_01jd5x8m2k3n4p5q6r7s8t9v0w'), {
        maxItems: 10_000,
        description: "Partnerships to assign this list to; each one's previous list is replaced",
        default: [],
      }),
    ),
  },
  {
    title: 'CreatePriceListBody',
    additionalProperties: false,
    examples: [
      {
        itemListData: { label: 'Wholesale 2030', status: 'ACTIVE', globalPriceFactor: 0.9 },
        entries: [{ itemVariantId: 'var_01jd5x8m2k3n4p5q6r7s8t9v0w', overrideFlatPrice: 11, currency: 'AUD' }],
        partnerships: ['prt_01jd5x8m2k3n4p5q6r7s8t9v0w'],
      },
    ],
  },
);
export type CreatePriceListInput = Static<typeof CreatePriceListBody>;

export const CreatePriceListResponse = Type.Object(
  {
    success: Type.Literal(true),
    id: Type.String({ description: 'The new price list id (list_)' }),
  },
  { title: 'PriceListCreated' },
);

export const PriceListParams = Type.Object({ id: Id('Price list id', 'list_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const ItemListEntryResponse = Type.Object(
  {
    id: Type.String({ description: 'Entry id (ile_); order items reference it' }),
    itemVariantId: Type.String(),
    itemId: Type.String(),
    overrideFlatPrice: Nullable(Type.Number()),
    currency: Nullable(Type.String()),
  },
  { title: 'PriceListEntry' },
);

export const PriceListResponse = Type.Object(
  {
    id: Type.String(),
    label: Type.String(),
    status: ItemListStatus,
    isDefault: Type.Boolean({ description: "The business's default list: no overrides, factors 1, every variant" }),
    globalPriceFactor: Type.Number(),
    startDate: Nullable(Type.String({ format: 'date-time' })),
    endDate: Nullable(Type.String({ format: 'date-time' })),
    entries: Type.Array(ItemListEntryResponse, {
      description: 'Entries of live variants, in catalogue order (variant creation, then sequence)',
    }),
    partnershipIds: Type.Array(Type.String(), { description: 'Live partnerships this list is assigned to' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    globalCostFactor: Type.Optional(Type.Number({ description: MARGIN_NOTE })),
  },
  { title: 'PriceList' },
);
export type PriceList = Static<typeof PriceListResponse>;

export const ListPriceListsQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(ItemListStatus),
    updatedSince: Type.Optional(DateTime('Only lists updated strictly after this time')),
  },
  { additionalProperties: false },
);

export const PriceListListResponse = ListEnvelope(PriceListResponse, 'PriceListPage');
