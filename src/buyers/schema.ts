import { Type, type Static } from 'typebox';
import {
  DateTime,
  Id,
  IncludeDeletedQuery,
  ListEnvelope,
  Nullable,
  PageQuery,
  Properties,
  PropertyFilterQuery,
  Text,
} from '../http/schema.ts';

export const PARTNERSHIP_STATUSES = [
  'DECLINED',
  'PENDING',
  'REVIEW',
  'ACTIVE',
  'PAUSED',
  'SUSPENDED',
  'EXPIRED',
  'TERMINATED',
] as const;
export const PartnershipStatus = Type.Enum([...PARTNERSHIP_STATUSES], {
  title: 'PartnershipStatus',
  description: 'Status of the partnership between the supplier and this buyer',
  examples: ['ACTIVE'],
});

const Email = Type.String({
  format: 'email',
  maxLength: 320,
  description: 'Email address',
  examples: ['orders@acme.example'],
});
const Phone = Type.String({
  pattern: '^[+0-9() .-]{3,40}$',
  description: 'Phone number: digits, spaces and + ( ) . -',
  examples: ['+61 2 9876 5432'],
});
const Code = (description: string, example: string) =>
  Type.String({ pattern: '^[A-Z][A-Z0-9_]{0,63}$', description, examples: [example] });
const Country = Type.String({
  pattern: '^[A-Z]{2}$',
  description: 'ISO 3166-1 alpha-2 country code',
  examples: ['AU'],
});
const ContactName = Nullable(Text(255, 'Name of the person at this address or number'));
const IsPrimary = Type.Boolean({
  description: "Marks the primary contact; at most one per kind, and the buyer's primaryEmail/primaryPhone follows it",
});

export const CreateEmail = Type.Object(
  {
    email: Email,
    contactName: Type.Optional(ContactName),
    isPrimary: Type.Optional(IsPrimary),
  },
  { title: 'CreateEmail', additionalProperties: false },
);

export const CreatePhone = Type.Object(
  {
    phone: Phone,
    contactName: Type.Optional(ContactName),
    isPrimary: Type.Optional(IsPrimary),
  },
  { title: 'CreatePhone', additionalProperties: false },
);

const locationFields = {
  label: Type.Optional(Nullable(Text(255, 'Label, e.g. "Main warehouse"'))),
  type: Type.Optional(Nullable(Code('Location type in upper case, e.g. WAREHOUSE', 'WAREHOUSE'))),
  status: Type.Optional(Code('Location status in upper case; ACTIVE when left out', 'ACTIVE')),
  addressLine2: Type.Optional(Nullable(Text(255, 'Second address line'))),
  city: Type.Optional(Nullable(Text(255, 'City or suburb'))),
  state: Type.Optional(Nullable(Text(255, 'State or region'))),
  postcode: Type.Optional(Nullable(Text(32, 'Postcode'))),
  country: Type.Optional(Nullable(Country)),
};
const AddressLine1 = Text(255, 'First address line', 1);

export const CreateLocation = Type.Object(
  { ...locationFields, addressLine1: AddressLine1 },
  { title: 'CreateLocation', additionalProperties: false },
);

const ContactId = (description: string, example: string) => Id(description, example);
const UpdateEmail = Type.Object(
  {
    id: ContactId('Email id', 'eml_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    email: Type.Optional(Email),
    contactName: Type.Optional(ContactName),
    isPrimary: Type.Optional(IsPrimary),
  },
  { additionalProperties: false },
);
const UpdatePhone = Type.Object(
  {
    id: ContactId('Phone id', 'phn_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    phone: Type.Optional(Phone),
    contactName: Type.Optional(ContactName),
    isPrimary: Type.Optional(IsPrimary),
  },
  { additionalProperties: false },
);
const UpdateLocation = Type.Object(
  {
    id: ContactId('Location id', 'loc_01jd5x8m2k3n4p5q6r7s8t9v0w'),
    ...locationFields,
    addressLine1: Type.Optional(AddressLine1),
  },
  { additionalProperties: false },
);

const buyerFields = {
  legalName: Type.Optional(Nullable(Text(255, 'Registered legal name'))),
  primaryEmail: Type.Optional(Nullable(Email)),
  primaryPhone: Type.Optional(Nullable(Phone)),
  buyerInfo: Type.Optional(
    Nullable({
      ...Properties,
      description: 'Free-form facts about the buyer, e.g. {"notes": "..."}; deep-merged on PATCH',
      examples: [{ notes: 'Deliveries before 9am' }],
    }),
  ),
};
const contacts = { maxItems: 100 };

export const CreateBuyerBody = Type.Object(
  {
    buyer: Type.Object(
      {
        name: Text(255, 'Trading name of the buyer organisation', 1),
        ...buyerFields,
        properties: Type.Optional(Nullable(Properties)),
      },
      { additionalProperties: false },
    ),
    partnershipStatus: Type.Optional({ ...PartnershipStatus, default: 'ACTIVE' }),
    emails: Type.Optional(Type.Array(CreateEmail, contacts)),
    phones: Type.Optional(Type.Array(CreatePhone, contacts)),
    locations: Type.Optional(Type.Array(CreateLocation, contacts)),
  },
  {
    title: 'CreateBuyerBody',
    additionalProperties: false,
    examples: [
      {
        buyer: { name: 'Acme Foods', legalName: 'Acme Foods Pty Ltd' },
        emails: [{ email: 'orders@acme.example', isPrimary: true }],
        locations: [
          { label: 'Main warehouse', type: 'WAREHOUSE', addressLine1: '1 Dock Road', city: 'Sydney', country: 'AU' },
        ],
      },
    ],
  },
);
export type CreateBuyerInput = Static<typeof CreateBuyerBody>;

const IdList = (description: string, example: string) => Type.Array(Id(description, example), contacts);

export const UpdateBuyerBody = Type.Object(
  {
    buyer: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Text(255, 'Trading name of the buyer organisation', 1)),
          ...buyerFields,
          properties: Type.Optional(Properties),
        },
        { additionalProperties: false },
      ),
    ),
    partnershipStatus: Type.Optional(PartnershipStatus),
    createEmails: Type.Optional(Type.Array(CreateEmail, contacts)),
    updateEmails: Type.Optional(Type.Array(UpdateEmail, contacts)),
    deleteEmails: Type.Optional(IdList('Email id', 'eml_01jd5x8m2k3n4p5q6r7s8t9v0w')),
    createPhones: Type.Optional(Type.Array(CreatePhone, contacts)),
    updatePhones: Type.Optional(Type.Array(UpdatePhone, contacts)),
    deletePhones: Type.Optional(IdList('Phone id', 'phn_01jd5x8m2k3n4p5q6r7s8t9v0w')),
    createLocations: Type.Optional(Type.Array(CreateLocation, contacts)),
    updateLocations: Type.Optional(Type.Array(UpdateLocation, contacts)),
    deleteLocations: Type.Optional(IdList('Location id', 'loc_01jd5x8m2k3n4p5q6r7s8t9v0w')),
  },
  {
    title: 'UpdateBuyerBody',
    additionalProperties: false,
    minProperties: 1,
    examples: [{ buyer: { buyerInfo: { notes: 'Deliveries before 9am' } } }],
  },
);
export type UpdateBuyerInput = Static<typeof UpdateBuyerBody>;
export type CreateEmailInput = Static<typeof CreateEmail>;
export type CreatePhoneInput = Static<typeof CreatePhone>;
export type CreateLocationInput = Static<typeof CreateLocation>;
export type UpdateEmailInput = Static<typeof UpdateEmail>;
export type UpdatePhoneInput = Static<typeof UpdatePhone>;
export type UpdateLocationInput = Static<typeof UpdateLocation>;

export const BuyerParams = Type.Object({ id: Id('Buyer id (the phantom id)', 'phm_01jd5x8m2k3n4p5q6r7s8t9v0w') });

export const CreateBuyerResponse = Type.Object(
  {
    success: Type.Literal(true),
    id: Type.String({ description: 'The buyer id; equals phantomId' }),
    phantomId: Type.String({ description: 'The buyer organisation (phm_)' }),
    partnershipId: Type.String({ description: 'The supplier-to-buyer partnership (prt_); orders attach here' }),
  },
  { title: 'BuyerCreated' },
);

const Timestamps = {
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
};
const Verification = {
  isVerified: Type.Boolean({ description: 'Always false: Supplyline does not verify contacts' }),
  verifiedAt: Nullable(Type.String({ format: 'date-time' })),
  sequence: Type.Integer({ description: 'Position, from 1, in the order contacts were added' }),
};

export const EmailResponse = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    contactName: Nullable(Type.String()),
    isPrimary: Type.Boolean(),
    ...Verification,
  },
  { title: 'BuyerEmail' },
);
export const PhoneResponse = Type.Object(
  {
    id: Type.String(),
    phone: Type.String(),
    contactName: Nullable(Type.String()),
    isPrimary: Type.Boolean(),
    ...Verification,
  },
  { title: 'BuyerPhone' },
);
export const LocationResponse = Type.Object(
  {
    id: Type.String(),
    label: Nullable(Type.String()),
    type: Nullable(Type.String()),
    status: Type.String(),
    addressLine1: Type.String(),
    addressLine2: Nullable(Type.String()),
    city: Nullable(Type.String()),
    state: Nullable(Type.String()),
    postcode: Nullable(Type.String()),
    country: Nullable(Type.String()),
    sequence: Type.Integer(),
  },
  { title: 'BuyerLocation' },
);

export const BuyerResponse = Type.Object(
  {
    id: Type.String({ description: 'The buyer id (phantom id, phm_)' }),
    name: Type.String(),
    legalName: Nullable(Type.String()),
    primaryEmail: Nullable(Type.String()),
    primaryPhone: Nullable(Type.String()),
    status: Type.String({ description: 'Status of the buyer organisation (ACTIVE)' }),
    partnershipId: Type.String(),
    partnershipStatus: PartnershipStatus,
    itemListId: Nullable(Type.String({ description: 'The price list assigned to the partnership' })),
    buyerInfo: Nullable(Type.Record(Type.String(), Type.Unknown())),
    properties: Nullable(Type.Record(Type.String(), Type.Unknown())),
    ...Timestamps,
    deletedAt: Nullable(Type.String({ format: 'date-time' })),
    emails: Type.Array(EmailResponse),
    phones: Type.Array(PhoneResponse),
    locations: Type.Array(LocationResponse),
  },
  { title: 'Buyer' },
);
export type Buyer = Static<typeof BuyerResponse>;

export const ListBuyersQuery = Type.Object(
  {
    ...PageQuery,
    ...IncludeDeletedQuery,
    updatedSince: Type.Optional(DateTime('Only buyers updated strictly after this time')),
    partnershipStatus: Type.Optional(PartnershipStatus),
    propertyPath: Type.Optional(PropertyFilterQuery.propertyPath),
    propertyValue: Type.Optional(PropertyFilterQuery.propertyValue),
    propertyExists: Type.Optional(PropertyFilterQuery.propertyExists),
  },
  { additionalProperties: false },
);

export const BuyerListResponse = ListEnvelope(BuyerResponse, 'BuyerPage');
