import { nextOf, offsetOf, type Page, type Paging } from '../db/list.ts';
import type { WebhookEndpoint } from './schema.ts';
import type { Db } from '../db/types.ts';
import { whereLive } from '../db/live.ts';
import { forUpdate } from '../db/dialect.ts';
import { toDelivery, toEndpoint } from './mapper.ts';
import type { DeliveryStatus, WebhookReplayTable } from './table.ts';
import type { Insertable } from 'kysely';

/** A live endpoint's row; with `lock`, locked until the transaction ends. */
export async function findEndpointRow(db: Db, businessId: string, id: string, lock = false) {
  const query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where(whereLive());
  return (lock ? forUpdate(db, query) : query).executeTakeFirst();
}

export type EndpointRow = NonNullable<Awaited<ReturnType<typeof findEndpointRow>>>;

/** How many live endpoints (disabled ones included) a business has. */
export async function countLiveEndpoints(db: Db, businessId: string): Promise<number> {
  const { n } = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('business_id', '=', businessId)
    .where(whereLive())
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** The endpoint's replays not finished yet. */
export async function countOpenReplays(db: Db, endpointId: string): Promise<number> {
  const { n } = await db
    .selectFrom('webhook_replays')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('endpoint_id', '=', endpointId)
    .where('finished_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertReplay(db: Db, replay: Insertable<WebhookReplayTable>): Promise<void> {
  await db.insertInto('webhook_replays').values(replay).execute();
}

/** Live endpoints, oldest first (ids grow with time). */
export async function listEndpoints(
  db: Db,
  businessId: string,
  paging: Paging,
  now: string,
): Promise<Page<WebhookEndpoint>> {
  const live = db.selectFrom('webhook_endpoints').where('business_id', '=', businessId).where(whereLive());
  const page = paging.after ? live.where('id', '>', paging.after.id) : live.offset(offsetOf(paging.page, paging.limit));
  const [rows, count] = await Promise.all([
    page.selectAll().orderBy('id').limit(paging.limit).execute(),
    live.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  const total = Number(count.n);
  const next = nextOf(rows, paging, total);
  return {
    items: rows.map((r) => toEndpoint(r, now)),
    total,
    page: paging.page,
    pageSize: paging.limit,
    next: next && { createdAt: null, id: next.id },
  };
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  /** Oldest first, after this delivery id (the API). */
  after?: string;
  /** Newest first, before this delivery id (the console's log); `after` is then not used. */
  before?: string;
  newestFirst?: boolean;
  limit: number;
}

export async function listDeliveries(db: Db, businessId: string, endpointId: string, filter: DeliveryFilter) {
  let query = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('endpoint_id', '=', endpointId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.newestFirst) {
    if (filter.before) query = query.where('id', '<', filter.before);
  } else if (filter.after) query = query.where('id', '>', filter.after);
  const rows = await query
    .orderBy('id', filter.newestFirst ? 'desc' : 'asc')
    .limit(filter.limit + 1)
    .execute();
  const hasMore = rows.length > filter.limit;
  const page = rows.slice(0, filter.limit);
  const attempts =
    page.length === 0
      ? []
      : await db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where(
            'delivery_id',
            'in',
            page.map((r) => r.id),
          )
          .orderBy('delivery_id')
          .orderBy('attempt')
          .execute();
  return {
    items: page.map((row) =>
      toDelivery(
        row,
        attempts.filter((a) => a.delivery_id === row.id),
      ),
    ),
    hasMore,
  };
}
