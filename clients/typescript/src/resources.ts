import type { EventPage, SupplylineEvent } from './events.ts';
import { readNdjson } from './ndjson.ts';
import type { RequestOptions, Transport } from './transport.ts';
import type { operations } from './types.ts';

/** The query an operation takes, as the API document declares it: enums, ranges and the cursor. */
export type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
/** A list's filters for an iterator, which sets `page` and `cursor` itself; `limit` is the page size. */
export type ListQuery<Op extends keyof operations> = Omit<QueryOf<Op>, 'page' | 'cursor'>;

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
  nextCursor: string | null;
}

/** An export's snapshot: iterate it once for its records; `sequence` is the last event it holds. */
export interface Snapshot<T> extends AsyncIterable<T> {
  sequence: number;
}

const at = (path: string, id: string) => `${path}/${encodeURIComponent(id)}`;

/** List, page and get: what every resource has. */
export function readable<T, Q extends object, P extends object>(t: Transport, path: string) {
  /**
   * Every record of the list, page after page by its cursor: each record that stays in the list
   * meanwhile comes exactly once, whatever is created or deleted.
   */
  async function* list(query?: Q, options?: RequestOptions): AsyncGenerator<T> {
    for (let cursor: string | null | undefined; cursor !== null; ) {
      const { data } = await t.json<Page<T>>({ method: 'GET', path, query: { ...query, cursor }, options });
      yield* data.items;
      cursor = data.nextCursor;
    }
  }
  return {
    list,
    /** One page; pass its `nextCursor` as `cursor` for the next. */
    page: (query?: P, options?: RequestOptions) =>
      t.json<Page<T>>({ method: 'GET', path, query, options }).then((r) => r.data),
    /** The record, and its ETag where it has versions (orders, invoices, shipments: pass it as `ifMatch` to a patch). */
    get: (id: string, options?: RequestOptions) => t.json<T>({ method: 'GET', path: at(path, id), options }),
  };
}

export const creatable = <C, R>(t: Transport, path: string) => ({
  create: (body: C, options?: RequestOptions) => t.json<R>({ method: 'POST', path, body, options }).then((r) => r.data),
});

/** PATCH of a resource without versions (items, buyers, webhook endpoints): no ETag, so no ifMatch. */
export const patchable = <T, U>(t: Transport, path: string) => ({
  patch: (id: string, body: U, options?: RequestOptions) =>
    t.json<T>({ method: 'PATCH', path: at(path, id), body, options }),
});

/** PATCH of a versioned resource (orders, invoices, shipments), which a read's ETag can guard. */
export const guardedPatchable = <T, U>(t: Transport, path: string) => ({
  /** PATCH; pass ifMatch (the ETag of a read) to fail with 412 when someone changed it since. */
  patch: (id: string, body: U, options: RequestOptions & { ifMatch?: string } = {}) =>
    t.json<T>({
      method: 'PATCH',
      path: at(path, id),
      body,
      headers: options.ifMatch ? { 'If-Match': options.ifMatch } : {},
      options,
    }),
});

export const deletable = (t: Transport, path: string) => ({
  delete: (id: string, options?: RequestOptions) =>
    t.json<void>({ method: 'DELETE', path: at(path, id), options }).then(() => undefined),
});

/** The resource's history, oldest first (GET {path}/{id}/events), also after it was deleted. */
export const historied = (t: Transport, path: string) => ({
  async *events(id: string, opts: { after?: number } & RequestOptions = {}): AsyncGenerator<SupplylineEvent> {
    for (let after = opts.after ?? 0; ; ) {
      const { data } = await t.json<EventPage>({
        method: 'GET',
        path: `${at(path, id)}/events`,
        query: { after, limit: 1000 },
        options: opts,
      });
      yield* data.items;
      if (!data.hasMore || data.items.length === 0) return;
      after = data.lastSequence;
    }
  },
});

export const exportable = <T>(t: Transport, path: string) => ({
  /** GET {path}/export: one snapshot as NDJSON, read a line at a time (constant memory at any size). */
  async export(options?: RequestOptions): Promise<Snapshot<T>> {
    const response = await t.stream({ method: 'GET', path: `${path}/export`, options });
    const records = readNdjson<T>(response.body!);
    return {
      sequence: Number(response.headers.get('supplyline-event-sequence')),
      [Symbol.asyncIterator]: () => records,
    };
  },
});
