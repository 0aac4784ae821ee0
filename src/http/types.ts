import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import type { RenderCache } from '../lib/render-cache.ts';
import type { RunWrite } from './idempotency.ts';

export type ApiInstance = FastifyInstance<
  RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider
>;

/** What route modules receive: dependencies as parameters, built once. */
export interface RouteDeps {
  db: Kysely<Database>;
  runWrite: RunWrite;
  /** Rendered orders, each served only while its stamp is current (src/orders/render.ts). */
  orderCache: RenderCache;
}
