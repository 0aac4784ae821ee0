import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, type Config } from './config.ts';
import { newSecretKey, parseSecretKeys, SecretBox } from './lib/secret-box.ts';
import { createDatabase, type DatabaseHandle } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import {
  bucketConnection,
  memoryBuckets,
  MemoryRateLimiter,
  RedisRateLimiter,
  redisBuckets,
  type Buckets,
  type RateLimiter,
} from './http/rate-limit.ts';

/**
 * Rate-limit stores: one Redis connection shared by instances when REDIS_URL is set, else memory;
 * the API's buckets (none when RATE_LIMIT_RPS=0) and the console's throttles (always on).
 */
export function createRateLimits(
  config: Config,
  onError: (error: unknown) => void = () => {},
): { api: RateLimiter | null; buckets: Buckets; close(): Promise<void> } {
  const redis = config.redisUrl ? bucketConnection(config.redisUrl, onError) : null;
  const settings = { ratePerSecond: config.rateLimitRps, burst: config.rateLimitBurst };
  const api =
    config.rateLimitRps === 0
      ? null
      : redis
        ? new RedisRateLimiter(redis, settings, { onError })
        : new MemoryRateLimiter(settings);
  return {
    api,
    buckets: redis ? redisBuckets(redis, onError) : memoryBuckets(),
    close: async () => {
      redis?.disconnect();
    },
  };
}

export async function openDatabase(
  config: Config,
  options: Parameters<typeof createDatabase>[1] = {},
): Promise<DatabaseHandle> {
  const handle = createDatabase(config.databaseUrl, {
    prepare: config.pgPreparedStatements,
    replicaUrls: config.databaseReplicaUrls,
    ...options,
  });
  try {
    await migrateToLatest(handle.db, handle.dialect, undefined, { waitMs: config.migrationLockWaitMs });
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * The SecretBox for stored secrets: SECRET_KEY (shared by every instance) or a key file made at
 * first start, owner-readable, beside the SQLite file or in ./data. Instances on several machines
 * need SECRET_KEY.
 */
export function resolveSecretBox(config: Config): { box: SecretBox; source: string } {
  if (config.secretKeys) return { box: new SecretBox(config.secretKeys), source: 'SECRET_KEY' };
  const dir = config.databaseUrl.startsWith('sqlite:')
    ? dirname(resolve(config.databaseUrl.slice('sqlite:'.length)))
    : resolve('data');
  const file = join(dir, 'secret.key');
  mkdirSync(dir, { recursive: true });
  // Written whole to this process's own file, then linked into place: `link` fails when the name
  // exists, so one key wins and no instance ever reads a half-written file.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${newSecretKey()}\n`, { flag: 'wx', mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(draft);
  }
  const keys = parseSecretKeys(readFileSync(file, 'utf8').trim());
  if (!keys) throw new ConfigError(`${file} does not hold a key (base64 of 32 bytes); remove it or set SECRET_KEY`);
  return { box: new SecretBox(keys), source: file };
}

/**
 * How far V8 lets the old generation grow after a full collection: by `percent` (V8's own factor
 * when 0). Chosen for the memory budget (docs/decisions/0039-server-process.md, 0048-memory-budget.md).
 * Set before anything large is allocated; V8 reads it at each new limit.
 */
export function applyHeapGrowth(percent: number, setFlags: (flags: string) => void = setFlagsFromString): void {
  if (percent > 0) setFlags(`--heap-growing-percent=${percent}`);
}
