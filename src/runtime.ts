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
 * The stores behind rate limits, on one Redis connection when REDIS_URL is set (shared by every
 * instance), else in memory: the API's buckets (none when RATE_LIMIT_RPS=0) and the console's
 * sign-in and password throttles (always on).
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

/** Opens the database from config and brings its schema up to date. */
export async function openDatabase(
  config: Config,
  options: Parameters<typeof createDatabase>[1] = {},
): Promise<DatabaseHandle> {
  const handle = createDatabase(config.databaseUrl, { prepare: config.pgPreparedStatements, ...options });
  try {
    await migrateToLatest(handle.db, handle.dialect, undefined, { waitMs: config.migrationLockWaitMs });
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * The SecretBox that encrypts stored secrets (webhook signing secrets). SECRET_KEY when set (every
 * instance must share it); otherwise a key file made on the first start, beside the SQLite file or
 * in ./data for PostgreSQL, readable by the owner only. Several instances started from one
 * directory share the file; instances on several machines need SECRET_KEY.
 */
export function resolveSecretBox(config: Config): { box: SecretBox; source: string } {
  if (config.secretKeys) return { box: new SecretBox(config.secretKeys), source: 'SECRET_KEY' };
  const dir = config.databaseUrl.startsWith('sqlite:')
    ? dirname(resolve(config.databaseUrl.slice('sqlite:'.length)))
    : resolve('data');
  const file = join(dir, 'secret.key');
  mkdirSync(dir, { recursive: true });
  // Written whole to a file of this process's own, then linked into place: `link` fails when the
  // name exists, so one key wins, and no instance can read the file before its key is in it
  // (created with `wx` and then written, a second instance read it empty in between).
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
 * How far V8 lets the old generation grow after a full collection before the next one: by
 * `percent` (V8's own factor, up to 4×, when 0). An export on PostgreSQL promotes short-lived rows,
 * and doubling instead of V8's factor lowered its peak memory markedly at the same speed; growing by
 * half (the default) keeps an instance under the mixed load within its memory budget
 * (docs/decisions/0039-server-process.md, 0048-memory-budget.md). Set before anything large is allocated; V8 reads
 * the flag each time it sets the next limit.
 */
export function applyHeapGrowth(percent: number, setFlags: (flags: string) => void = setFlagsFromString): void {
  if (percent > 0) setFlags(`--heap-growing-percent=${percent}`);
}
