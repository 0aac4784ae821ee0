import { ResyncRequiredError, SupplylineApiError } from './errors.ts';
import { isRetryableStatus, sleep, type Transport } from './transport.ts';
import type { components, operations } from './types.ts';

type Schemas = components['schemas'];
type EventBase = Omit<Schemas['Event'], 'type' | 'resourceType' | 'data'>;

/** One resource type's events: `type` names the change, `data.object` is the resource after it. */
export type ResourceEvent<R extends string, Change extends string, T> = EventBase & {
  type: `${R}.${Change}`;
  resourceType: R;
  data: { object: T; changes?: Record<string, unknown> };
};

/**
 * Every event of the feed, discriminated on `type` (and `resourceType`). API keys and users are
 * managed in the console and have no schema in the API document, so their objects are records.
 */
export type SupplylineEvent =
  | ResourceEvent<'order', 'created' | 'updated' | 'deleted' | 'ingested' | 'acknowledged', Schemas['Order']>
  | ResourceEvent<'shipment', 'created' | 'updated' | 'voided', Schemas['Shipment']>
  | ResourceEvent<'item', 'created' | 'updated' | 'deleted', Schemas['Item']>
  | ResourceEvent<'buyer', 'created' | 'updated', Schemas['Buyer']>
  | ResourceEvent<'price_list', 'created' | 'updated', Schemas['PriceList']>
  | ResourceEvent<'invoice', 'created' | 'updated', Schemas['Invoice']>
  | ResourceEvent<
      'webhook_endpoint',
      'created' | 'updated' | 'paused' | 'disabled' | 'deleted',
      Schemas['WebhookEndpoint']
    >
  | ResourceEvent<'api_key', 'created' | 'updated' | 'revoked', Record<string, unknown>>
  | ResourceEvent<'user', 'created' | 'updated' | 'password_changed' | 'password_reset', Record<string, unknown>>;

export type EventType = SupplylineEvent['type'];
export type EventPage = { items: SupplylineEvent[]; lastSequence: number; hasMore: boolean };
export type ListEventsQuery = NonNullable<operations['listEvents']['parameters']['query']>;

export interface FollowOptions {
  /** Follow events with a sequence above this one: the last checkpoint stored, or an export's sequence. */
  after: number;
  /** Only these types (`order.*` style); the gap check needs the whole feed, so it is off when filtering. */
  types?: string[];
  signal?: AbortSignal;
  /** Seconds each long poll may wait, 1..30 (default 25). */
  waitSeconds?: number;
  /** Called with the lastSequence after each page's events have been yielded: store it to resume there. */
  onCheckpoint?: (sequence: number) => void | Promise<void>;
  /** Called when a poll fails for a network reason, a cut body or a retryable status, before waiting and trying again. */
  onError?: (error: unknown) => void;
}

/**
 * Long-polls the feed from `after`, forever or until the signal: each event once, in order. A poll
 * that fails (dropped, cut mid-body, timed out, 429 or 5xx) is asked again from the same place.
 */
export async function* followEvents(transport: Transport, opts: FollowOptions): AsyncGenerator<SupplylineEvent> {
  let after = opts.after;
  const wait = opts.waitSeconds ?? 25;
  // A wait of 0 would poll without waiting, as fast as answers come, and spend the business's rate limit.
  if (!Number.isInteger(wait) || wait < 1 || wait > 30)
    throw new RangeError(`waitSeconds must be a whole number of seconds from 1 to 30, got ${wait}`);
  let failures = 0;
  while (!opts.signal?.aborted) {
    let page: EventPage;
    try {
      const query = { after, wait, limit: 1000, types: opts.types?.join(',') };
      // A long poll waits up to `wait` seconds before answering.
      page = (
        await transport.json<EventPage>({
          method: 'GET',
          path: '/api/v1/events',
          query,
          options: { signal: opts.signal, timeout: (wait + 15) * 1000 },
        })
      ).data;
    } catch (error) {
      if (opts.signal?.aborted) return;
      if (error instanceof SupplylineApiError && error.status === 410)
        throw new ResyncRequiredError('gone', after, error.message);
      if (error instanceof SupplylineApiError && error.status === 409 && error.errorCode === 'CONFLICT')
        throw new ResyncRequiredError('ahead', after, error.message);
      if (error instanceof SupplylineApiError && !isRetryableStatus(error.status)) throw error;
      opts.onError?.(error);
      await sleep(Math.min(10_000, 250 * 2 ** failures++) * (0.5 + Math.random() / 2), opts.signal).catch(
        () => undefined,
      );
      continue;
    }
    failures = 0;
    for (const event of page.items) {
      if (!opts.types && event.sequence !== after + 1)
        throw new ResyncRequiredError('gap', after, `next event was ${event.sequence}`);
      yield event;
      after = event.sequence;
    }
    after = Math.max(after, page.lastSequence);
    await opts.onCheckpoint?.(after);
  }
}
