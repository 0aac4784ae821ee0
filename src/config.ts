import { parseSecretKeys } from './lib/secret-box.ts';
import { parseCidrs } from './businesses/allowlist.ts';
import { maskUrl } from './lib/urls.ts';
import { costOf } from './users/password.ts';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly redisUrl: string | null;
  readonly rateLimitRps: number;
  readonly rateLimitBurst: number;
  readonly idempotencyTtlHours: number;
  /** Events older than this are purged (EVENT_RETENTION_DAYS). */
  readonly eventRetentionDays: number;
  readonly logLevel: string;
  readonly bodyLimitBytes: number;
  /** How long a verified key stays cached; revocation must reach every instance within 5 s. */
  readonly authCacheMs: number;
  /** PostgreSQL: name statements (off for a pooler in transaction mode that cannot keep them). */
  readonly pgPreparedStatements: boolean;
  /**
   * PostgreSQL: where the events listener (LISTEN, one session of its own) connects:
   * LISTEN_DATABASE_URL, else DATABASE_DIRECT_URL (PostgreSQL itself when DATABASE_URL goes through
   * a pooler in transaction mode, which cannot keep a LISTEN), else DATABASE_URL.
   */
  readonly listenDatabaseUrl: string;
  /** DATABASE_REPLICA_URLS: PostgreSQL streaming replicas of DATABASE_URL that reads may use (src/db/replicas); empty: none. */
  readonly databaseReplicaUrls: readonly string[];
  /** PostgreSQL: how long a start or a CLI command waits for another instance's migrations (MIGRATION_LOCK_WAIT_SECONDS). */
  readonly migrationLockWaitMs: number;
  /** Memory for rendered orders (src/orders/render.ts), in MB; 0 turns the cache off. */
  readonly responseCacheMb: number;
  /** How much V8's old generation may grow after a full collection, in percent (0: V8's own factor). */
  readonly heapGrowingPercent: number;
  /** A client must send all its headers within this time (slow-header clients are closed). */
  readonly headersTimeoutMs: number;
  /** A client must send its whole request, body included, within this time. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this time. */
  readonly keepAliveTimeoutMs: number;
  /** On SIGTERM, requests in flight get this long to finish before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /** After SIGTERM, how long the instance goes on serving with /readyz failing, so the load balancer drains it first. */
  readonly shutdownDrainMs: number;
  /** How many sandboxes a live business may have (SANDBOXES_PER_BUSINESS, src/sandbox). */
  readonly sandboxesPerBusiness: number;
  /**
   * How long a simulated buyer waits for an order's acknowledgement before its console shows a finding
   * (SANDBOX_ACKNOWLEDGE_MINUTES, 10; src/sandbox/findings.ts).
   */
  readonly sandboxAcknowledgeMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <token>` (METRICS_TOKEN). */
  readonly metricsToken: string | null;
  /** SECRET_KEY: keys that encrypt stored secrets; null means the key file beside the data (src/runtime.ts). */
  readonly secretKeys: Buffer[] | null;
  readonly webhooks: WebhookConfig;
  /** CONSOLE_COOKIE_SECURE: the console's session cookie is marked Secure (serve the console over https). */
  readonly consoleCookieSecure: boolean;
  /**
   * TRUST_PROXY: the addresses or CIDRs of the proxies in front of the service, whose
   * X-Forwarded-For names the client (key allowlists, rate limits, the audit trail); null: none,
   * the socket's address is the client's.
   */
  readonly trustProxy: string[] | null;
  /** CORS_ORIGINS: the exact origins whose pages may call the API from a browser (src/http/cors.ts); null: none. */
  readonly corsOrigins: readonly string[] | null;
  readonly imports: ImportConfig;
}

export interface ImportConfig {
  /** The largest import file taken (IMPORT_MAX_BYTES, 1 GiB). */
  readonly maxBytes: number;
  /** Imports this instance applies at once (IMPORT_CONCURRENCY, 2; 0: this instance applies none). */
  readonly concurrency: number;
  /**
   * How long an instance holds an import past its last line (IMPORT_LEASE_SECONDS, 30): after a
   * crash, another instance resumes the import once this has passed.
   */
  readonly leaseMs: number;
}

export interface WebhookConfig {
  /** Delay before each attempt, in seconds (WEBHOOK_RETRY_SCHEDULE); its length is the number of attempts. */
  readonly retrySchedule: number[];
  /** One attempt's time limit (WEBHOOK_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** Allows http and private, loopback and other reserved addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  readonly allowPrivateNetworks: boolean;
  /** An endpoint failing without a success for this long is paused (WEBHOOK_PAUSE_AFTER_SECONDS, 5 days). */
  readonly pauseAfterSeconds: number;
  /** Deliveries in flight at once per instance (WEBHOOK_CONCURRENCY). */
  readonly concurrency: number;
  /** Whether this instance runs delivery workers (WEBHOOK_WORKERS, on). */
  readonly workers: boolean;
}

export const DEFAULT_RETRY_SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400];

function trustProxy(raw: string | undefined): string[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  try {
    return parseCidrs(raw);
  } catch (error) {
    throw new ConfigError(
      `TRUST_PROXY must name the proxies' addresses or CIDRs, comma-separated: ${(error as Error).message}`,
    );
  }
}

/** Exact origins only (scheme, host, port): never `*`, `null` or a path, so an origin is allowed only by name. */
function corsOrigins(raw: string | undefined): readonly string[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const origins = raw
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      /* reported below */
    }
    if (
      !parsed ||
      !['http:', 'https:'].includes(parsed.protocol) ||
      parsed.origin !== origin ||
      parsed.hostname.includes('*')
    ) {
      throw new ConfigError(
        'CORS_ORIGINS must list exact origins such as https://app.example.com, comma-separated ' +
          `(no *, path or trailing slash): got '${origin}'`,
      );
    }
  }
  return Object.freeze(origins);
}

function retrySchedule(raw: string | undefined): number[] {
  if (raw === undefined || raw.trim() === '') return DEFAULT_RETRY_SCHEDULE;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 50 || !parts.every((p) => /^\d{1,6}$/.test(p) && Number(p) <= 7 * 86_400)) {
    throw new ConfigError(
      `WEBHOOK_RETRY_SCHEDULE must be 1 to 50 comma-separated delays in seconds (each at most 604800), got '${raw}'`,
    );
  }
  return parts.map(Number);
}

function secretKeys(raw: string | undefined): Buffer[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const keys = parseSecretKeys(raw);
  if (!keys)
    throw new ConfigError(
      'SECRET_KEY must be base64 of 32 random bytes (several comma-separated to rotate; the first encrypts), ' +
        'for example the output of: openssl rand -base64 32',
    );
  return keys;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got '${raw}'`);
  }
  return Number(raw);
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(on|true|1)$/i.test(raw.trim())) return true;
  if (/^(off|false|0)$/i.test(raw.trim())) return false;
  throw new ConfigError(`${name} must be on or off, got '${raw}'`);
}

const POSTGRES_URL = /^postgres(ql)?:\/\/.+/;

function databaseUrl(raw: string | undefined): string {
  const url = raw === undefined || raw === '' ? 'sqlite:./data/supplyline.db' : raw;
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url) || !URL.canParse(url)) {
    throw new ConfigError(`DATABASE_URL must be sqlite:PATH or postgres://..., got '${maskUrl(url)}'`);
  }
  return url;
}

/** A PostgreSQL URL of its own (`name`), or undefined when it is not set. */
function postgresUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!POSTGRES_URL.test(raw) || !URL.canParse(raw))
    throw new ConfigError(`${name} must be a postgres:// URL, got '${maskUrl(raw)}'`);
  return raw;
}

function replicaUrls(raw: string | undefined, primary: string): readonly string[] {
  const urls = (raw ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length > 0 && !primary.startsWith('postgres'))
    throw new ConfigError('DATABASE_REPLICA_URLS needs DATABASE_URL to be PostgreSQL: SQLite has no replicas');
  // A URL that does not parse may be half of one cut at a comma in its password: it is not shown.
  urls.forEach((url, i) => {
    if (!POSTGRES_URL.test(url) || !URL.canParse(url))
      throw new ConfigError(
        'DATABASE_REPLICA_URLS must be postgres:// URLs separated by commas (write a comma in a password as %2C): ' +
          `URL ${i + 1} of ${urls.length} does not parse`,
      );
  });
  return Object.freeze(urls);
}

function metricsToken(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (raw.length < 16 || !/^[\x21-\x7e]+$/.test(raw))
    throw new ConfigError('METRICS_TOKEN must be at least 16 printable characters without spaces');
  return raw;
}

/** Reads every setting once, at start; a bad value stops the process with a clear message. */
export function loadConfig(env: Env = process.env): Config {
  try {
    costOf(env.PASSWORD_HASH_COST);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got '${logLevel}'`);
  }
  const redisUrl = env.REDIS_URL || null;
  if (redisUrl !== null && (!/^rediss?:\/\/.+/.test(redisUrl) || !URL.canParse(redisUrl))) {
    throw new ConfigError(`REDIS_URL must be a redis:// or rediss:// URL, got '${maskUrl(redisUrl)}'`);
  }
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', 10_000, 1000, 600_000);
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 15_000, 1000, 600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not be larger than REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    databaseUrl: databaseUrl(env.DATABASE_URL),
    redisUrl,
    rateLimitRps: integer(env, 'RATE_LIMIT_RPS', 50, 0, 1_000_000),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', 100, 1, 10_000_000),
    idempotencyTtlHours: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 365),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 400, 1, 36_500),
    logLevel,
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 100 * 1024 * 1024),
    authCacheMs: 4000,
    pgPreparedStatements: flag(env, 'PG_PREPARED_STATEMENTS', true),
    listenDatabaseUrl:
      postgresUrl('LISTEN_DATABASE_URL', env.LISTEN_DATABASE_URL) ??
      postgresUrl('DATABASE_DIRECT_URL', env.DATABASE_DIRECT_URL) ??
      databaseUrl(env.DATABASE_URL),
    databaseReplicaUrls: replicaUrls(env.DATABASE_REPLICA_URLS, databaseUrl(env.DATABASE_URL)),
    migrationLockWaitMs: integer(env, 'MIGRATION_LOCK_WAIT_SECONDS', 60, 1, 86_400) * 1000,
    responseCacheMb: integer(env, 'RESPONSE_CACHE_MB', 32, 0, 4096),
    heapGrowingPercent: integer(env, 'HEAP_GROWING_PERCENT', 50, 0, 1000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 1000, 600_000),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 9000, 1000, 600_000),
    shutdownDrainMs: integer(env, 'SHUTDOWN_DRAIN_MS', 0, 0, 600_000),
    sandboxesPerBusiness: integer(env, 'SANDBOXES_PER_BUSINESS', 10, 0, 1000),
    sandboxAcknowledgeMs: integer(env, 'SANDBOX_ACKNOWLEDGE_MINUTES', 10, 1, 43_200) * 60_000,
    metricsToken: metricsToken(env.METRICS_TOKEN),
    secretKeys: secretKeys(env.SECRET_KEY),
    consoleCookieSecure: flag(env, 'CONSOLE_COOKIE_SECURE', false),
    trustProxy: trustProxy(env.TRUST_PROXY),
    corsOrigins: corsOrigins(env.CORS_ORIGINS),
    imports: Object.freeze({
      maxBytes: integer(env, 'IMPORT_MAX_BYTES', 1024 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
      concurrency: integer(env, 'IMPORT_CONCURRENCY', 2, 0, 64),
      leaseMs: integer(env, 'IMPORT_LEASE_SECONDS', 30, 1, 3600) * 1000,
    }),
    webhooks: Object.freeze({
      retrySchedule: retrySchedule(env.WEBHOOK_RETRY_SCHEDULE),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
      allowPrivateNetworks: flag(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
      pauseAfterSeconds: integer(env, 'WEBHOOK_PAUSE_AFTER_SECONDS', 5 * 86_400, 1, 365 * 86_400),
      concurrency: integer(env, 'WEBHOOK_CONCURRENCY', 32, 1, 1000),
      workers: flag(env, 'WEBHOOK_WORKERS', true),
    }),
  });
}
