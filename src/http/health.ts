import { sql, type Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { pendingMigrations } from '../db/migrate.ts';
import type { Database } from '../db/types.ts';

/** How long readiness waits for the database before it says no. */
const READY_TIMEOUT_MS = 2000;

export interface Lifecycle {
  /** The instance is shutting down (SIGTERM): readiness fails first, so the load balancer drains it. */
  draining(): boolean;
}

/**
 * Kubernetes-style probes, outside the API (no key, not in the OpenAPI document):
 * - `/livez` (and `/healthz`, kept as its alias): the process answers;
 * - `/readyz`: the database answers within 2 s, every migration this release knows is applied, and
 *   the instance is not shutting down. 503 with the reason otherwise.
 */
export function registerHealth(
  app: FastifyInstance,
  db: Kysely<Database>,
  lifecycle: Lifecycle = { draining: () => false },
): void {
  const live = async () => ({ status: 'ok' });
  app.get('/livez', { schema: { hide: true } }, live);
  app.get('/healthz', { schema: { hide: true } }, live);
  let migrated = false;

  const check = async (): Promise<string | null> => {
    if (lifecycle.draining()) return 'shutting down';
    try {
      await sql`select 1`.execute(db);
      if (!migrated) {
        // Once every migration is there it stays there: a later release only adds to them.
        migrated = (await pendingMigrations(db)).length === 0;
        if (!migrated) return 'migrations pending';
      }
      return null;
    } catch {
      return 'database unavailable';
    }
  };

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const reason = await Promise.race([
      check(),
      new Promise<string>((resolve) => setTimeout(resolve, READY_TIMEOUT_MS, 'database unavailable').unref()),
    ]);
    return reply
      .code(reason === null ? 200 : 503)
      .send(reason === null ? { status: 'ok' } : { status: 'unavailable', reason });
  });
}
