import { Redis } from 'ioredis';

export interface RateLimitDecision {
  allowed: boolean;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one token is available (0 when allowed). */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  take(key: string): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export interface BucketSettings {
  ratePerSecond: number;
  burst: number;
}

/** Token-bucket arithmetic, mirrored by the Redis script. */
export function refill(tokens: number, elapsedMs: number, settings: BucketSettings): number {
  return Math.min(settings.burst, tokens + (Math.max(0, elapsedMs) * settings.ratePerSecond) / 1000);
}

export function decide(
  tokensBefore: number,
  settings: BucketSettings,
): { tokens: number; decision: RateLimitDecision } {
  const allowed = tokensBefore >= 1;
  const tokens = allowed ? tokensBefore - 1 : tokensBefore;
  return {
    tokens,
    decision: {
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds: Math.ceil((settings.burst - tokens) / settings.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / settings.ratePerSecond)),
    },
  };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  private readonly settings: BucketSettings;
  private readonly clock: () => number;

  constructor(settings: BucketSettings, clock: () => number = Date.now) {
    this.settings = settings;
    this.clock = clock;
  }

  async take(key: string): Promise<RateLimitDecision> {
    const now = this.clock();
    const bucket = this.buckets.get(key);
    const before = bucket ? refill(bucket.tokens, now - bucket.at, this.settings) : this.settings.burst;
    const { tokens, decision } = decide(before, this.settings);
    if (!bucket && this.buckets.size >= 100_000) this.evictFull(now);
    this.buckets.set(key, { tokens, at: now });
    return decision;
  }

  /** A full bucket carries no information, so it is dropped: memory stays bounded. */
  private evictFull(now: number): void {
    for (const [key, b] of this.buckets) {
      if (refill(b.tokens, now - b.at, this.settings) >= this.settings.burst) this.buckets.delete(key);
    }
  }

  async close(): Promise<void> {}
}

// One round trip, atomic, on the Redis clock, so instances need not agree on time.
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(s[1]) or burst
local at = tonumber(s[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
`;

export interface RedisLimiterOptions {
  /** Prefix, so kinds of bucket sharing one Redis never meet. */
  prefix?: string;
  onError?: (error: unknown) => void;
  /** Asked while Redis fails; without it requests are allowed: a rate limit must not become the outage. */
  whenDown?: RateLimiter;
}

export function bucketConnection(url: string, onError: (error: unknown) => void = () => {}): Redis {
  // A slow or absent Redis may delay a request by at most a second.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1000, connectTimeout: 2000 });
  redis.on('error', onError);
  redis.defineCommand('supplylineTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  return redis;
}

/** Token buckets in Redis, shared by instances; a connection it opened it closes, one given it leaves open. */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly owned: boolean;
  private readonly settings: BucketSettings;
  private readonly prefix: string;
  private readonly onError: (error: unknown) => void;
  private readonly whenDown: RateLimiter | undefined;

  constructor(redis: string | Redis, settings: BucketSettings, options: RedisLimiterOptions = {}) {
    this.settings = settings;
    this.prefix = options.prefix ?? 'supplyline:rl:';
    this.onError = options.onError ?? (() => {});
    this.whenDown = options.whenDown;
    this.owned = typeof redis === 'string';
    this.redis = typeof redis === 'string' ? bucketConnection(redis, this.onError) : redis;
  }

  async take(key: string): Promise<RateLimitDecision> {
    try {
      const [allowed, tokens] = await (
        this.redis as unknown as {
          supplylineTake(k: string, rate: number, burst: number): Promise<[number, string]>;
        }
      ).supplylineTake(this.prefix + key, this.settings.ratePerSecond, this.settings.burst);
      const after = Number(tokens);
      const { decision } = decide(allowed === 1 ? after + 1 : after, this.settings);
      return decision;
    } catch (error) {
      this.onError(error);
      return (
        this.whenDown?.take(key) ?? {
          allowed: true,
          remaining: this.settings.burst,
          resetSeconds: 0,
          retryAfterSeconds: 0,
        }
      );
    }
  }

  async close(): Promise<void> {
    if (this.owned) this.redis.disconnect();
  }
}

/** Buckets of one kind (the console's throttles): in Redis when there is one, so a guesser gets one allowance everywhere. */
export type Buckets = (settings: BucketSettings, name: string) => RateLimiter;

export const memoryBuckets =
  (clock: () => number = Date.now): Buckets =>
  (settings) =>
    new MemoryRateLimiter(settings, clock);

export function redisBuckets(redis: Redis, onError?: (error: unknown) => void): Buckets {
  return (settings, name) =>
    new RedisRateLimiter(redis, settings, {
      prefix: `supplyline:rl:${name}:`,
      onError,
      whenDown: new MemoryRateLimiter(settings),
    });
}

export function rateLimitHeaders(decision: RateLimitDecision, settings: BucketSettings): Record<string, string> {
  const window = Math.max(1, Math.ceil(settings.burst / settings.ratePerSecond));
  return {
    'ratelimit-policy': `"burst";q=${settings.burst};w=${window}`,
    ratelimit: `"burst";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}
