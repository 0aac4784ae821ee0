import type { Cursors } from './cursor.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import type { RenderCache } from '../lib/render-cache.ts';
import type { EventBus } from '../events/bus.ts';
import type { OpenSnapshot } from '../db/snapshot.ts';
import type { RunWrite } from './write.ts';
import type { ListTuning } from '../orders/read-model/index.ts';

export type ApiInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What route modules receive: dependencies as parameters, built once. */
export interface RouteDeps {
  db: Kysely<Database>;
  /** The one way a route writes: the write runner, Idempotency-Key and the response sent (src/http/write.ts). */
  runWrite: RunWrite;
  /** Wakes long polls of the feed when events commit. */
  events: EventBus;
  /** Read-only snapshots for exports (src/db/snapshot.ts). */
  openSnapshot: OpenSnapshot;
  /** Rendered orders, each served only while its stamp is current (src/orders/render.ts). */
  orderCache: RenderCache;
  /** Seals and opens list cursors (src/http/cursor.ts). */
  cursors: Cursors;
  /** The order list plan's size thresholds (src/orders/read-model). */
  orderListTuning: ListTuning;
}
