import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from '../../src/http/rate-limit.ts';
import { describeEachBackend } from '../helpers/context.ts';

const settings = { ratePerSecond: 2, burst: 3 };

describe('MemoryRateLimiter (token bucket)', () => {
  it('allows a burst, then refuses with Retry-After, then refills at the rate', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(settings, () => now);
    const first = await Promise.all([1, 2, 3].map(() => limiter.take('a')));
    assert.deepEqual(
      first.map((d) => [d.allowed, d.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
      ],
    );
    const refused = await limiter.take('a');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterSeconds, 1);
    now += 499;
    assert.equal((await limiter.take('a')).allowed, false);
    now += 2;
    assert.equal((await limiter.take('a')).allowed, true);
    assert.equal((await limiter.take('b')).allowed, true, 'buckets are per key');
    now += 10_000;
    assert.equal((await limiter.take('a')).remaining, 2, 'never more than the burst');
  });
});

/**
 * Four requests in a row, the fourth refused: the memory store runs on a clock that stands still,
 * the Redis store (timed by Redis) at one token a second, so that a busy machine, with requests
 * a few hundred milliseconds apart, does not refill the bucket in between.
 */
function limiterSuite(name: string, make: () => RateLimiter, limits = settings) {
  const window = Math.ceil(limits.burst / limits.ratePerSecond);
  describeEachBackend(
    `Rate limiting with ${name}`,
    (ctx) => {
      it('limits per business with RateLimit headers, and answers 429 with Retry-After', async () => {
        const a = await ctx().createTenant();
        const b = await ctx().createTenant();
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) {
          const res = await ctx().request('GET', '/api/v1/items', { as: a });
          statuses.push(res.status);
          assert.equal(res.headers['ratelimit-policy'], `"burst";q=3;w=${window}`);
          assert.match(String(res.headers.ratelimit), /^"burst";r=\d+;t=\d+$/);
          if (res.status === 429) {
            assert.ok(Number(res.headers['retry-after']) >= 1);
            assert.equal(res.body.errorCode, 'RATE_LIMITED');
            assert.equal(res.body.message, "You're sending requests too quickly. Please try again shortly.");
            assert.equal(res.body.requestId, res.headers['x-request-id']);
          }
        }
        assert.deepEqual(statuses, [200, 200, 200, 429]);
        assert.equal(
          (await ctx().request('GET', '/api/v1/items', { as: b })).status,
          200,
          'another business has its own bucket',
        );
      });

      it('limits failed authentication per client address', async () => {
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) {
          statuses.push(
            (
              await ctx().request('GET', '/api/v1/items', {
                headers: { 'x-business-id': 'bus_x', 'x-api-key': 'nope' },
              })
            ).status,
          );
        }
        assert.deepEqual(statuses, [401, 401, 401, 429]);
      });
    },
    { config: { rateLimitRps: limits.ratePerSecond, rateLimitBurst: limits.burst }, rateLimiter: make },
  );
}

const stillClock = Date.now();
limiterSuite('the memory store', () => new MemoryRateLimiter(settings, () => stillClock));

describe('RedisRateLimiter while Redis fails', () => {
  it("answers from its fallback when it has one (the console's throttles keep their per-instance buckets)", async () => {
    const errors: unknown[] = [];
    const whenDown = new MemoryRateLimiter({ ratePerSecond: 0.001, burst: 1 }, () => stillClock);
    const limiter = new RedisRateLimiter('redis://127.0.0.1:1', settings, { onError: (e) => errors.push(e), whenDown });
    const decisions = [await limiter.take('k'), await limiter.take('k')];
    await limiter.close();
    assert.deepEqual(
      decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.ok(decisions[1].retryAfterSeconds >= 1);
    assert.ok(errors.length >= 2, 'each failure is reported');
  });
});

if (process.env.TEST_REDIS_URL) {
  const url = process.env.TEST_REDIS_URL;
  const prefix = () => `supplyline-test:${randomBytes(4).toString('hex')}:`;
  const slow = { ratePerSecond: 1, burst: 3 };
  limiterSuite('the Redis store', () => new RedisRateLimiter(url, slow, { prefix: prefix() }), slow);

  describe('RedisRateLimiter', () => {
    it('shares one bucket between instances', async () => {
      const p = prefix();
      const one = new RedisRateLimiter(url, settings, { prefix: p });
      const two = new RedisRateLimiter(url, settings, { prefix: p });
      const decisions = [await one.take('k'), await two.take('k'), await one.take('k'), await two.take('k')];
      await one.close();
      await two.close();
      assert.deepEqual(
        decisions.map((d) => d.allowed),
        [true, true, true, false],
      );
      assert.ok(decisions[3].retryAfterSeconds >= 1);
    });

    it('fails open when Redis cannot be reached, instead of failing requests', async () => {
      const errors: unknown[] = [];
      const limiter = new RedisRateLimiter('redis://127.0.0.1:1', settings, {
        prefix: prefix(),
        onError: (e) => errors.push(e),
      });
      const decision = await limiter.take('k');
      await limiter.close();
      assert.equal(decision.allowed, true);
      assert.ok(errors.length > 0);
    });
  });
}
