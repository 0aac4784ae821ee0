import { createHash } from 'node:crypto';
import { validationError } from '../lib/errors.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import type { Page, Paging, Position } from '../db/list.ts';

/**
 * List cursors (docs/decisions/0006): a place in a list and the next page's number, sealed with the
 * SecretBox together with the list, business and filters it was issued for. Opaque; a forged one
 * fails to open and one for another business, list or filters is refused.
 */

/** A cursor is bound to every query parameter but these. */
type ListQuery = Record<string, unknown> & { page?: number; cursor?: string };
const PAGING = new Set(['page', 'limit', 'cursor']);

interface Sealed {
  l: string;
  b: string;
  f: string;
  c: string | null;
  i: string;
  p: number;
}

const NOT_OURS = 'Not a cursor of this list: pass nextCursor exactly as a page of this list gave it';

/** The request's filters, in a fixed order, hashed. */
function filtersKey(query: ListQuery): string {
  const filters = Object.keys(query)
    .filter((k) => !PAGING.has(k) && query[k] !== undefined)
    .sort()
    .map((k) => [k, query[k]]);
  return createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 22);
}

export class Cursors {
  readonly #box: SecretBox;

  constructor(box: SecretBox) {
    this.#box = box;
  }

  /** `page` and `limit`, or a cursor's place and page; `rawQuery` tells a sent `page` from its default. */
  paging(
    list: string,
    businessId: string,
    query: ListQuery & { page: number; limit: number },
    rawQuery: string,
  ): Paging {
    if (query.cursor === undefined) return { page: query.page, limit: query.limit };
    if (new URLSearchParams(rawQuery).has('page'))
      throw validationError({ cursor: 'page and cursor cannot be combined: a cursor carries its page' });
    let sealed: Sealed;
    try {
      sealed = JSON.parse(this.#box.open(query.cursor)) as Sealed;
    } catch {
      throw validationError({ cursor: NOT_OURS });
    }
    if (sealed.l !== list || sealed.b !== businessId) throw validationError({ cursor: NOT_OURS });
    if (sealed.f !== filtersKey(query)) {
      throw validationError({
        cursor: 'This cursor was issued for other filters: send it with the filters of the request that gave it',
      });
    }
    return { page: sealed.p, limit: query.limit, after: { createdAt: sealed.c, id: sealed.i } };
  }

  next(list: string, businessId: string, query: ListQuery, page: Pick<Page<unknown>, 'next' | 'page'>): string | null {
    if (!page.next) return null;
    const { createdAt, id }: Position = page.next;
    const sealed: Sealed = { l: list, b: businessId, f: filtersKey(query), c: createdAt, i: id, p: page.page + 1 };
    return this.#box.seal(JSON.stringify(sealed));
  }

  /** The envelope with `nextCursor` in place of the repository's `next`. */
  answer<T>(list: string, businessId: string, query: ListQuery, page: Page<T>) {
    const { next: _, ...envelope } = page;
    return { ...envelope, nextCursor: this.next(list, businessId, query, page) };
  }

  async list<T>(request: ListRequest, list: string, read: (paging: Paging) => Promise<Page<T>>) {
    const query = request.query as ListQuery & { page: number; limit: number };
    const page = await read(this.paging(list, request.businessId, query, rawQueryOf(request)));
    return this.answer(list, request.businessId, query, page);
  }
}

export interface ListRequest {
  businessId: string;
  query: unknown;
  raw: { url?: string };
}

export const rawQueryOf = (request: ListRequest) => {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at + 1);
};
