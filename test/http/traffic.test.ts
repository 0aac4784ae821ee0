import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { ArrivingRequests, registerArrivals } from '../../src/http/traffic.ts';

describe('arriving requests (what shortens a SQLite import batch)', () => {
  const appWith = async (arrivals: ArrivingRequests) => {
    const app = Fastify();
    await app.register(
      async (api) => {
        registerArrivals(api, arrivals, '/api/v1');
        api.get('/orders', async () => ({}));
        api.get('/imports/:id', async () => ({}));
      },
      { prefix: '/api/v1' },
    );
    app.get('/health', async () => ({}));
    return app;
  };

  it("counts the API's requests, not an import's own (a client polling it) nor a health check", async () => {
    const arrivals = new ArrivingRequests();
    const app = await appWith(arrivals);
    assert.equal(arrivals.arrive(), false);
    await app.inject({ url: '/api/v1/imports/imp_1' });
    await app.inject({ url: '/health' });
    assert.equal(arrivals.arrive(), false);
    await app.inject({ url: '/api/v1/orders?limit=1' });
    assert.equal(arrivals.arrive(), true);
    await app.close();
  });

  it('forgets a request after a second', async () => {
    let now = 10_000;
    const arrivals = new ArrivingRequests(() => now);
    const app = await appWith(arrivals);
    await app.inject({ url: '/api/v1/orders' });
    now += 999;
    assert.equal(arrivals.arrive(), true);
    now += 1;
    assert.equal(arrivals.arrive(), false);
    await app.close();
  });
});
