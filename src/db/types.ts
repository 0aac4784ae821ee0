import type { Kysely, Transaction } from 'kysely';
import type { BusinessTable, ApiKeyTable, BusinessCounterTable } from '../businesses/table.ts';
import type { AuditEventTable } from '../audit/table.ts';
import type { ImportChunkTable, ImportResultTable, ImportTable } from '../imports/table.ts';
import type { ItemListTable, ItemListEntryTable } from '../pricing/table.ts';
import type { ItemTable, PlatformItemTable, ItemVariantTable } from '../items/table.ts';
import type {
  PhantomTable,
  PhantomBuyerTable,
  PartnershipTable,
  PhantomEmailTable,
  PhantomPhoneTable,
  PhantomLocationTable,
} from '../buyers/table.ts';
import type { IdempotencyKeyTable, WriteClockTable } from '../write/table.ts';
import type { EventTable } from '../events/table.ts';
import type { SessionTable, UserTable } from '../users/table.ts';
import type {
  WebhookAttemptTable,
  WebhookDeliveryTable,
  WebhookEndpointTable,
  WebhookReplayTable,
} from '../webhooks/table.ts';
import type { OrderTable, OrderItemTable } from '../orders/table.ts';
import type { InstanceTable } from './table.ts';
import type { InvoiceTable, InvoiceLineItemTable } from '../invoices/table.ts';
import type {
  AcknowledgementTable,
  ShipmentChangeCountTable,
  ShipmentCountTable,
  ShipmentTable,
} from '../fulfilment/table.ts';
import type { SimulationOrderTable, SimulationRunTable } from '../sandbox/table.ts';
import type {
  OrderChangeCountTable,
  OrderCountTable,
  OrderCreatedCountTable,
  OrderPropertyTable,
  OrderPropertyCountTable,
} from '../orders/read-model/table.ts';

/** The schema as Kysely sees it; each table's type lives beside its resource (`<resource>/table.ts`). */
export interface Database {
  events: EventTable;
  businesses: BusinessTable;
  api_keys: ApiKeyTable;
  audit_events: AuditEventTable;
  imports: ImportTable;
  import_chunks: ImportChunkTable;
  import_results: ImportResultTable;
  item_lists: ItemListTable;
  item_list_entries: ItemListEntryTable;
  items: ItemTable;
  platform_items: PlatformItemTable;
  item_variants: ItemVariantTable;
  idempotency_keys: IdempotencyKeyTable;
  phantoms: PhantomTable;
  phantom_buyers: PhantomBuyerTable;
  partnerships: PartnershipTable;
  phantom_emails: PhantomEmailTable;
  phantom_phones: PhantomPhoneTable;
  phantom_locations: PhantomLocationTable;
  orders: OrderTable;
  order_items: OrderItemTable;
  business_counters: BusinessCounterTable;
  write_clocks: WriteClockTable;
  instances: InstanceTable;
  order_counts: OrderCountTable;
  order_change_counts: OrderChangeCountTable;
  order_deleted_change_counts: OrderChangeCountTable;
  order_created_counts: OrderCreatedCountTable;
  order_deleted_counts: OrderCreatedCountTable;
  order_properties: OrderPropertyTable;
  order_property_counts: OrderPropertyCountTable;
  order_deleted_properties: OrderPropertyTable;
  order_deleted_property_counts: OrderPropertyCountTable;
  invoices: InvoiceTable;
  invoice_line_items: InvoiceLineItemTable;
  acknowledgements: AcknowledgementTable;
  shipments: ShipmentTable;
  simulation_runs: SimulationRunTable;
  simulation_orders: SimulationOrderTable;
  shipment_counts: ShipmentCountTable;
  shipment_change_counts: ShipmentChangeCountTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  webhook_replays: WebhookReplayTable;
  users: UserTable;
  sessions: SessionTable;
}

/** What every repository function takes first: the database or an open transaction. */
export type Db = Kysely<Database> | Transaction<Database>;
export type Dialect = 'sqlite' | 'postgres';
