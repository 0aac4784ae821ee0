import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/connection.ts';

/** The OpenAPI document exactly as /openapi.json serves it, built in process (no server, no files). */
export async function buildOpenapiDocument(): Promise<Record<string, unknown>> {
  const handle = createDatabase('sqlite::memory:');
  const app = await createApp({ db: handle.db, config: loadConfig({ RATE_LIMIT_RPS: '0' }), rateLimiter: null });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await handle.close();
  }
}
