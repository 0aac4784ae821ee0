import { sql, type Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { pendingMigrations } from '../db/migrate.ts';
import type { Database } from '../db/types.ts';
import type { ReadReplicas } from '../db/replicas/index.ts';

const READY_TIMEOUT_MS = 2000;

export interface Lifecycle {
  /** Shutting down: readiness fails first, so the load balancer drains the instance. */
  draining(): boolean;
}

/**
 * Probes outside the API: `/livez` (alias `/healthz`), the process answers; `/readyz`, the database
 * answers in time, this release's migrations are applied, and no shutdown is under way (else 503).
 * With replicas it lists each one's state and lag; a replica that is down leaves the instance ready,
 * since its reads go to the primary.
 */
export function registerHealth(
  app: FastifyInstance,
  db: Kysely<Database>,
  lifecycle: Lifecycle = { draining: () => false },
  replicas?: ReadReplicas,
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
        // Once applied, migrations stay applied: a later release only adds.
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
    // Unauthenticated: each replica by its place in DATABASE_REPLICA_URLS, not its host (the log and /metrics name it).
    const extra = replicas
      ? { replicas: replicas.status().map(({ name: _, ...status }, i) => ({ replica: i + 1, ...status })) }
      : {};
    return reply
      .code(reason === null ? 200 : 503)
      .send(reason === null ? { status: 'ok', ...extra } : { status: 'unavailable', reason, ...extra });
  });
}
