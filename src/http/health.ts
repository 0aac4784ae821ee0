import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import type { FastifyInstance } from 'fastify';

/** Liveness (`/healthz`: the process answers) and readiness (`/readyz`: the database answers within 2 s). */
export function registerHealth(app: FastifyInstance, db: Kysely<Database>): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const ready = await Promise.race([
      sql`select 1`.execute(db).then(() => true, () => false),
      new Promise<boolean>((resolve) => setTimeout(resolve, 2000, false).unref()),
    ]);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable' });
  });
}
