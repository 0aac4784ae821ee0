import createClient, { type Client } from 'openapi-fetch';
import { followEvents, type EventPage, type FollowOptions, type ListEventsQuery } from './events.ts';
import {
  creatable,
  deletable,
  exportable,
  historied,
  guardedPatchable,
  patchable,
  readable,
  type ListQuery,
  type QueryOf,
  type Snapshot,
} from './resources.ts';
import { createTransport, type Consistency, type Hooks, type RequestOptions, type RetryOptions } from './transport.ts';
import type { components, paths } from './types.ts';

export {
  ResyncRequiredError,
  SupplylineApiError,
  SupplylineConnectionError,
  SupplylineError,
  SupplylineTimeoutError,
  type ErrorBody,
} from './errors.ts';
export type { EventPage, EventType, FollowOptions, ListEventsQuery, ResourceEvent, SupplylineEvent } from './events.ts';
export type { ListQuery, Page, QueryOf, Snapshot } from './resources.ts';
export type { Consistency, Hooks, RequestOptions, RetryOptions } from './transport.ts';
export type { components, operations, paths } from './types.ts';
export { VERSION } from './version.ts';

export type Schemas = components['schemas'];
export type Order = Schemas['Order'];
/** @deprecated The feed's events are `SupplylineEvent`, typed per resource; this is the document's loose shape. */
export type Event = Schemas['Event'];

export interface ClientOptions {
  /** The server's origin, e.g. https://api.example.com (the /api/v1 paths are added). */
  baseUrl: string;
  businessId: string;
  apiKey: string;
  retry?: RetryOptions;
  /** Default time a call may take in ms, retries included (30 000); each call may pass its own `timeout`. */
  timeout?: number;
  hooks?: Hooks;
  fetch?: (request: Request, init?: RequestInit) => Promise<Response>;
  /**
   * `after-my-writes`: reads send `Consistent-After` with the latest `Supplyline-Position` seen, for
   * servers that read from replicas (each call may pass its own `consistency`). Default `any`.
   */
  consistency?: Consistency;
}

const WEBHOOKS = '/api/v1/webhook-endpoints';

const SHIPMENTS = '/api/v1/shipments';

export function createSupplylineClient(options: ClientOptions) {
  const auth = { 'X-Business-Id': options.businessId, 'X-API-Key': options.apiKey };
  const t = createTransport({
    baseUrl: options.baseUrl,
    headers: auth,
    fetch: options.fetch,
    retry: options.retry,
    timeout: options.timeout,
    hooks: options.hooks,
    consistency: options.consistency,
  });
  // The typed openapi-fetch client, for anything else, through the same retries (it reads bodies itself).
  const raw: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: auth,
    fetch: async (request: Request) => {
      const payload = request.body ? await request.text() : undefined;
      return t.fetch({
        method: request.method,
        path: request.url,
        headers: Object.fromEntries(request.headers),
        payload,
        options: { signal: request.signal },
      });
    },
  });
  const send = <T>(
    method: string,
    path: string,
    call: { body?: unknown; query?: object; options?: RequestOptions } = {},
  ) => t.json<T>({ method, path, ...call }).then((r) => r.data);

  const orders = {
    ...readable<Order, ListQuery<'listOrders'>, QueryOf<'listOrders'>>(t, '/api/v1/orders'),
    ...guardedPatchable<Order, Schemas['UpdateOrderBody']>(t, '/api/v1/orders'),
    ...deletable(t, '/api/v1/orders'),
    ...historied(t, '/api/v1/orders'),
    ...exportable<Order>(t, '/api/v1/orders'),
    /** POST /api/v1/buyers/{buyerId}/orders: an order priced from the buyer's item list. */
    create: (buyerId: string, body: Schemas['CreateOrderBody'], options?: RequestOptions) =>
      send<Order>('POST', `/api/v1/buyers/${encodeURIComponent(buyerId)}/orders`, { body, options }),
    /** POST /api/v1/orders: announce an order; its Idempotency-Key is the SHA-256 the contract derives from the ids. */
    async ingest(orderId: string, opts?: Omit<RequestOptions, 'idempotencyKey'>) {
      const digest = await crypto.subtle.digest(
        'SHA-256',
        new TextEncoder().encode(`${orderId}-${options.businessId}-order-integration`),
      );
      const key = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
      return send<Schemas['Success']>('POST', '/api/v1/orders', {
        body: { orderId, businessId: options.businessId },
        options: { ...opts, idempotencyKey: key },
      });
    },
    /** Load the export, hand it to onSnapshot (which iterates it), then follow the feed from the export's sequence. */
    async *exportThenFollow(
      opts: Omit<FollowOptions, 'after'> & {
        onSnapshot: (orders: Snapshot<Order>, sequence: number) => void | Promise<void>;
      },
    ) {
      const snapshot = await orders.export({ signal: opts.signal });
      await opts.onSnapshot(snapshot, snapshot.sequence);
      // What onSnapshot left unread is not needed: stop its body.
      await snapshot[Symbol.asyncIterator]().return?.(undefined);
      yield* followEvents(t, { ...opts, after: snapshot.sequence });
    },
  };

  return {
    raw,
    /** The latest `Supplyline-Position` an answer carried, or null (a server without read replicas sends none). */
    position: t.position,
    orders,
    items: {
      ...readable<Schemas['Item'], ListQuery<'listItems'>, QueryOf<'listItems'>>(t, '/api/v1/items'),
      ...creatable<Schemas['CreateItemBody'], Schemas['ItemCreated']>(t, '/api/v1/items'),
      ...patchable<Schemas['Item'], Schemas['UpdateItemBody']>(t, '/api/v1/items'),
      ...deletable(t, '/api/v1/items'),
      ...historied(t, '/api/v1/items'),
      ...exportable<Schemas['Item']>(t, '/api/v1/items'),
    },
    buyers: {
      ...readable<Schemas['Buyer'], ListQuery<'listBuyers'>, QueryOf<'listBuyers'>>(t, '/api/v1/buyers'),
      ...creatable<Schemas['CreateBuyerBody'], Schemas['BuyerCreated']>(t, '/api/v1/buyers'),
      ...patchable<Schemas['Buyer'], Schemas['UpdateBuyerBody']>(t, '/api/v1/buyers'),
      ...historied(t, '/api/v1/buyers'),
      ...exportable<Schemas['Buyer']>(t, '/api/v1/buyers'),
    },
    priceLists: {
      ...readable<Schemas['PriceList'], ListQuery<'listPriceLists'>, QueryOf<'listPriceLists'>>(t, '/api/v1/pricing'),
      ...creatable<Schemas['CreatePriceListBody'], Schemas['PriceListCreated']>(t, '/api/v1/pricing'),
    },
    invoices: {
      ...readable<Schemas['Invoice'], ListQuery<'listInvoices'>, QueryOf<'listInvoices'>>(t, '/api/v1/invoices'),
      ...creatable<Schemas['CreateInvoiceBody'], Schemas['Invoice']>(t, '/api/v1/invoices'),
      ...guardedPatchable<Schemas['Invoice'], Schemas['UpdateInvoiceBody']>(t, '/api/v1/invoices'),
      ...historied(t, '/api/v1/invoices'),
      ...exportable<Schemas['Invoice']>(t, '/api/v1/invoices'),
    },
    acknowledgements: {
      /** POST /api/v1/orders/{orderId}/acknowledgements: line decisions; lines not named are accepted as ordered. */
      create: (orderId: string, body: Schemas['CreateAcknowledgementBody'], options?: RequestOptions) =>
        send<Schemas['Acknowledgement']>('POST', `/api/v1/orders/${encodeURIComponent(orderId)}/acknowledgements`, {
          body,
          options,
        }),
      /** The order's acknowledgements, newest first: the first is the current one. */
      list: (orderId: string, options?: RequestOptions) =>
        send<Schemas['AcknowledgementList']>('GET', `/api/v1/orders/${encodeURIComponent(orderId)}/acknowledgements`, {
          options,
        }).then((list) => list.items),
    },
    shipments: {
      ...readable<Schemas['Shipment'], ListQuery<'listShipments'>, QueryOf<'listShipments'>>(t, SHIPMENTS),
      ...guardedPatchable<Schemas['Shipment'], Schemas['UpdateShipmentBody']>(t, SHIPMENTS),
      ...historied(t, SHIPMENTS),
      ...exportable<Schemas['Shipment']>(t, SHIPMENTS),
      /** POST /api/v1/orders/{orderId}/shipments: packages or lines; 409 when a line has less left to ship. */
      create: (orderId: string, body: Schemas['CreateShipmentBody'], options?: RequestOptions) =>
        send<Schemas['Shipment']>('POST', `/api/v1/orders/${encodeURIComponent(orderId)}/shipments`, { body, options }),
      /** DELETE: voids the shipment, which stays with status VOIDED; answers it. */
      void: (id: string, options?: RequestOptions) =>
        send<Schemas['Shipment']>('DELETE', `${SHIPMENTS}/${encodeURIComponent(id)}`, { options }),
    },
    sandbox: {
      /**
       * POST /api/v1/sandbox/simulations/orders, with a sandbox's test key (sl_test_) only: a simulated buyer's
       * orders, made now (`count` at most 100). A live key gets a 403.
       */
      simulateOrders: (body: Schemas['SimulateOrdersBody'] = {}, options?: RequestOptions) =>
        send<Schemas['SimulatedOrdersResponse']>('POST', '/api/v1/sandbox/simulations/orders', { body, options }).then(
          (r) => r.orders,
        ),
    },
    webhookEndpoints: {
      ...readable<Schemas['WebhookEndpoint'], ListQuery<'listWebhookEndpoints'>, QueryOf<'listWebhookEndpoints'>>(
        t,
        WEBHOOKS,
      ),
      ...creatable<Schemas['CreateWebhookEndpoint'], Schemas['WebhookEndpointWithSecret']>(t, WEBHOOKS),
      ...patchable<Schemas['WebhookEndpoint'], Schemas['UpdateWebhookEndpoint']>(t, WEBHOOKS),
      ...deletable(t, WEBHOOKS),
      /** A new signing secret, shown this once; the old one keeps signing for `gracePeriodSeconds`. */
      rotateSecret: (id: string, body: Schemas['RotateWebhookSecret'] = {}, options?: RequestOptions) =>
        send<Schemas['WebhookEndpointWithSecret']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/rotate-secret`, {
          body,
          options,
        }),
      /** Sends a webhook.test event to this endpoint only. */
      test: (id: string, options?: RequestOptions) =>
        send<Schemas['WebhookTest']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/test`, { options }),
      /** Delivers the events after `afterSequence` up to `untilSequence` again, in order. */
      replay: (id: string, body: Schemas['ReplayWebhookEvents'], options?: RequestOptions) =>
        send<Schemas['WebhookReplay']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/replay`, { body, options }),
      /** Every delivery of the endpoint, oldest first, with its attempts. */
      async *deliveries(
        id: string,
        query: Omit<QueryOf<'listWebhookDeliveries'>, 'after'> = {},
        options?: RequestOptions,
      ): AsyncGenerator<Schemas['WebhookDelivery']> {
        for (let after: string | undefined; ; ) {
          const page = await send<Schemas['WebhookDeliveryPage']>(
            'GET',
            `${WEBHOOKS}/${encodeURIComponent(id)}/deliveries`,
            { query: { limit: 100, ...query, after }, options },
          );
          yield* page.items;
          if (!page.hasMore || page.items.length === 0) return;
          after = page.items[page.items.length - 1].id;
        }
      },
    },
    events: {
      follow: (opts: FollowOptions) => followEvents(t, opts),
      /** One page of the feed (GET /api/v1/events). */
      list: (query: ListEventsQuery = {}, options?: RequestOptions) =>
        t
          .json<EventPage>({
            method: 'GET',
            path: '/api/v1/events',
            query,
            // A long poll answers after up to `wait` seconds: its timeout is that and 15 s more.
            options: query.wait ? { timeout: (query.wait + 15) * 1000, ...options } : options,
          })
          .then((r) => r.data),
    },
  };
}

export type SupplylineClient = ReturnType<typeof createSupplylineClient>;
