import type { Config } from './config.ts';
import { createDatabase, type DatabaseHandle } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.ts';

/** The store behind rate limits: none when RATE_LIMIT_RPS=0, Redis when REDIS_URL is set, else memory. */
export function createRateLimiter(config: Config, onError: (error: unknown) => void = () => {}): RateLimiter | null {
  if (config.rateLimitRps === 0) return null;
  const settings = { ratePerSecond: config.rateLimitRps, burst: config.rateLimitBurst };
  return config.redisUrl ? new RedisRateLimiter(config.redisUrl, settings, undefined, onError) : new MemoryRateLimiter(settings);
}

/** Opens the database from config and brings its schema up to date. */
export async function openDatabase(config: Config, options: Parameters<typeof createDatabase>[1] = {}): Promise<DatabaseHandle> {
  const handle = createDatabase(config.databaseUrl, { prepare: config.pgPreparedStatements, ...options });
  try {
    await migrateToLatest(handle.db, handle.dialect);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}
