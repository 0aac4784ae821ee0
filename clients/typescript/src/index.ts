import createClient, { type Client } from 'openapi-fetch';
import { ResyncRequiredError, SupplylineError, type ErrorBody } from './errors.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';
import type { components, paths } from './types.ts';

export { SupplylineError, ResyncRequiredError } from './errors.ts';
export type { RetryOptions } from './retry.ts';
export type { components, paths } from './types.ts';

export type Schemas = components['schemas'];
export type Order = Schemas['Order'];
export type Event = Schemas['Event'];

export interface ClientOptions {
  /** The server's origin, e.g. https://api.example.com (the /api/v1 paths are added). */
  baseUrl: string;
  businessId: string;
  apiKey: string;
  retry?: RetryOptions;
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | undefined>;
interface Page<T> { items: T[]; total: number; page: number; pageSize: number; nextCursor: string | null }

export interface FollowOptions {
  /** Follow events with a sequence above this one. */
  after: number;
  /** Only these types (`order.*` style); the gap check needs the whole feed, so it is off when filtering. */
  types?: string[];
  signal?: AbortSignal;
  /** Seconds each long poll may wait, 1..30 (default 25). */
  waitSeconds?: number;
  /** Called with the lastSequence after each page's events have been yielded: store it to resume there. */
  onCheckpoint?: (sequence: number) => void | Promise<void>;
  /** Called when a poll fails for a network reason or a retryable status, before waiting and trying again. */
  onError?: (error: unknown) => void;
}

const WEBHOOKS = '/api/v1/webhook-endpoints';

async function fail(response: Response): Promise<never> {
  const body = await response.json().catch(() => undefined) as ErrorBody | undefined;
  throw new SupplylineError(response.status, body, response.headers.get('x-request-id'));
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const t = setTimeout(() => { signal?.removeEventListener('abort', abort); resolve(); }, ms);
  const abort = () => { clearTimeout(t); reject(signal!.reason); };
  signal?.addEventListener('abort', abort, { once: true });
});

export function createSupplylineClient(options: ClientOptions) {
  const baseFetch = options.fetch ?? globalThis.fetch;
  const auth = { 'X-Business-Id': options.businessId, 'X-API-Key': options.apiKey };
  const send = retryingFetch((input, init) => baseFetch(input, init), options.retry);
  // Long polls wait up to 30 s before answering; exports stream for as long as the data takes.
  const poll = retryingFetch((input, init) => baseFetch(input, init), { ...options.retry, totalTimeoutMs: Math.max(options.retry?.totalTimeoutMs ?? 0, 45_000) });
  const stream = retryingFetch((input, init) => baseFetch(input, init), { ...options.retry, cutOff: false });
  const raw: Client<paths> = createClient<paths>({ baseUrl: options.baseUrl, headers: auth, fetch: send });
  const url = (path: string, query: Query = {}) => {
    const u = new URL(path, options.baseUrl);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  };

  /** One request as JSON, with the ETag; throws SupplylineError on failure. */
  async function call<T>(method: string, path: string, init: { query?: Query; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}) {
    const headers: Record<string, string> = { ...auth, ...init.headers };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const response = await send(url(path, init.query), {
      method, headers, signal: init.signal, body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    if (!response.ok) return fail(response);
    const data = response.status === 204 ? undefined : await response.json();
    return { data: data as T, etag: response.headers.get('etag') ?? undefined, response };
  }

  /**
   * Every item of a paged list, page after page by its cursor, as an async iterator: each record
   * that stays in the list meanwhile comes exactly once, whatever is created or deleted.
   */
  async function* paginate<T>(path: string, query: Query = {}, pageSize = 100): AsyncGenerator<T> {
    for (let cursor: string | null | undefined; cursor !== null;) {
      const { data } = await call<Page<T>>('GET', path, { query: { ...query, limit: pageSize, ...(cursor === undefined ? {} : { cursor }) } });
      yield* data.items;
      cursor = data.nextCursor;
    }
  }

  /** Every item of a list paged by a cursor (`hasMore`), each next page asked for with `next(page)`. */
  async function* continuing<T, P extends { items: T[]; hasMore: boolean }>(path: string, query: Query, next: (page: P) => Query): AsyncGenerator<T> {
    let current = query;
    for (;;) {
      const { data } = await call<P>('GET', path, { query: current });
      yield* data.items;
      if (!data.hasMore || data.items.length === 0) return;
      current = { ...query, ...next(data) };
    }
  }

  type EventPage = { items: Event[]; lastSequence: number; hasMore: boolean };
  /** One resource's history, oldest first (GET {path}/{id}/events), also after it was deleted. */
  const history = (path: string) => (id: string, opts: { after?: number } = {}) =>
    continuing<Event, EventPage>(`${path}/${encodeURIComponent(id)}/events`, { after: opts.after ?? 0, limit: 1000 }, (p) => ({ after: p.lastSequence }));

  function resource<T, C, P, R = unknown>(path: string) {
    return {
      list: (query: Query = {}, pageSize?: number) => paginate<T>(path, query, pageSize),
      page: (query: Query = {}) => call<Page<T>>('GET', path, { query }).then((r) => r.data),
      get: (id: string) => call<T>('GET', `${path}/${encodeURIComponent(id)}`),
      create: (body: C) => call<R>('POST', path, { body }).then((r) => r.data),
      /** PATCH; pass ifMatch (the ETag of a read) to fail with 412 when someone changed it since. */
      patch: (id: string, body: P, opts: { ifMatch?: string } = {}) =>
        call<T>('PATCH', `${path}/${encodeURIComponent(id)}`, { body, headers: opts.ifMatch ? { 'If-Match': opts.ifMatch } : {} }),
      delete: (id: string) => call<void>('DELETE', `${path}/${encodeURIComponent(id)}`).then(() => undefined),
    };
  }

  async function* follow(opts: FollowOptions): AsyncGenerator<Event> {
    let after = opts.after;
    const wait = opts.waitSeconds ?? 25;
    let failures = 0;
    while (!opts.signal?.aborted) {
      let response: Response;
      try {
        response = await poll(url('/api/v1/events', { after, wait, limit: 1000, types: opts.types?.join(',') }), { headers: auth, signal: opts.signal });
      } catch (error) {
        if (opts.signal?.aborted) return;
        opts.onError?.(error);
        await sleep(Math.min(10_000, 250 * 2 ** failures++) * (0.5 + Math.random() / 2), opts.signal).catch(() => undefined);
        continue;
      }
      if (response.status === 410) {
        const body = await response.json().catch(() => undefined) as ErrorBody | undefined;
        throw new ResyncRequiredError('gone', after, body?.message ?? 'below retention');
      }
      if (response.status === 429 || response.status === 503) {
        opts.onError?.(new SupplylineError(response.status, await response.json().catch(() => undefined) as ErrorBody | undefined));
        await sleep(Math.min(10_000, 250 * 2 ** failures++), opts.signal).catch(() => undefined);
        continue;
      }
      if (!response.ok) return fail(response);
      failures = 0;
      const page = await response.json() as { items: Event[]; lastSequence: number; hasMore: boolean };
      for (const event of page.items) {
        if (!opts.types && event.sequence !== after + 1) {
          throw new ResyncRequiredError('gap', after, `next event was ${event.sequence}`);
        }
        yield event;
        after = event.sequence;
      }
      after = Math.max(after, page.lastSequence);
      await opts.onCheckpoint?.(after);
    }
  }

  const orders = {
    ...resource<Order, never, Schemas['UpdateOrderBody']>('/api/v1/orders'),
    events: history('/api/v1/orders'),
    /** POST /api/v1/buyers/{buyerId}/orders: an order priced from the buyer's item list. */
    create: (buyerId: string, body: Schemas['CreateOrderBody']) =>
      call<Order>('POST', `/api/v1/buyers/${encodeURIComponent(buyerId)}/orders`, { body }).then((r) => r.data),
    /** POST /api/v1/orders: announce an order; its Idempotency-Key is the SHA-256 the contract derives from the ids. */
    async ingest(orderId: string) {
      const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${orderId}-${options.businessId}-order-integration`));
      const key = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
      return call<Schemas['Success']>('POST', '/api/v1/orders', { body: { orderId, businessId: options.businessId }, headers: { 'Idempotency-Key': key } }).then((r) => r.data);
    },
    /** Every live order of the export (NDJSON) and the event sequence the snapshot holds. */
    async export(signal?: AbortSignal): Promise<{ sequence: number; orders: Order[] }> {
      const response = await stream(url('/api/v1/orders/export'), { headers: auth, signal });
      if (!response.ok) return fail(response);
      const sequence = Number(response.headers.get('supplyline-event-sequence'));
      const text = await response.text();
      return { sequence, orders: text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Order) };
    },
    /** Load the export, hand it to onSnapshot, then follow the feed from the export's sequence. */
    async *exportThenFollow(opts: Omit<FollowOptions, 'after'> & { onSnapshot: (orders: Order[], sequence: number) => void | Promise<void> }) {
      const snapshot = await orders.export(opts.signal);
      await opts.onSnapshot(snapshot.orders, snapshot.sequence);
      yield* follow({ ...opts, after: snapshot.sequence });
    },
  };

  return {
    raw,
    call,
    paginate,
    orders,
    items: { ...resource<Schemas['Item'], Schemas['CreateItemBody'], Schemas['UpdateItemBody'], Schemas['ItemCreated']>('/api/v1/items'), events: history('/api/v1/items') },
    buyers: { ...resource<Schemas['Buyer'], Schemas['CreateBuyerBody'], Schemas['UpdateBuyerBody'], Schemas['BuyerCreated']>('/api/v1/buyers'), events: history('/api/v1/buyers') },
    priceLists: resource<Schemas['PriceList'], Schemas['CreatePriceListBody'], never, Schemas['PriceListCreated']>('/api/v1/pricing'),
    invoices: { ...resource<Schemas['Invoice'], Schemas['CreateInvoiceBody'], Schemas['UpdateInvoiceBody'], Schemas['Invoice']>('/api/v1/invoices'), events: history('/api/v1/invoices') },
    webhookEndpoints: {
      ...resource<Schemas['WebhookEndpoint'], Schemas['CreateWebhookEndpoint'], Schemas['UpdateWebhookEndpoint'], Schemas['WebhookEndpointWithSecret']>(WEBHOOKS),
      /** A new signing secret, shown this once; the old one keeps signing for `gracePeriodSeconds`. */
      rotateSecret: (id: string, body: Schemas['RotateWebhookSecret']) =>
        call<Schemas['WebhookEndpointWithSecret']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/rotate-secret`, { body }).then((r) => r.data),
      /** Sends a webhook.test event to this endpoint only. */
      test: (id: string) => call<Schemas['WebhookTest']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/test`).then((r) => r.data),
      /** Delivers the events after `afterSequence` up to `untilSequence` again, in order. */
      replay: (id: string, body: Schemas['ReplayWebhookEvents']) =>
        call<Schemas['WebhookReplay']>('POST', `${WEBHOOKS}/${encodeURIComponent(id)}/replay`, { body }).then((r) => r.data),
      /** Every delivery of the endpoint, oldest first, with its attempts. */
      deliveries: (id: string, query: { status?: Schemas['WebhookDelivery']['status'] } = {}) =>
        continuing<Schemas['WebhookDelivery'], Schemas['WebhookDeliveryPage']>(
          `${WEBHOOKS}/${encodeURIComponent(id)}/deliveries`, { ...query, limit: 100 }, (p) => ({ after: p.items[p.items.length - 1].id }),
        ),
    },
    events: {
      follow,
      list: (query: Query = {}) => call<{ items: Event[]; lastSequence: number; hasMore: boolean }>('GET', '/api/v1/events', { query }).then((r) => r.data),
    },
  };
}

export type SupplylineClient = ReturnType<typeof createSupplylineClient>;
