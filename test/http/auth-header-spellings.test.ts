import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { MemoryRateLimiter } from '../../src/http/rate-limit.ts';
import { describeEachBackend, type TestContext } from '../helpers/context.ts';
import { createResources, idFor, operationsOf, spellingsOf } from '../reliability/openapi-walk.ts';

/** One request with the request target exactly as given, over a real socket. */
function send(port: number, method: string, target: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function listen(ctx: TestContext): Promise<number> {
  if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  return (ctx.app.server.address() as AddressInfo).port;
}

describeEachBackend(
  'Authentication whatever the spelling of the path',
  (ctx) => {
    it('answers 401, 400 or 404 (never 2xx or 5xx) to every operation of /openapi.json in every spelling, without credentials', async () => {
      const owner = await ctx().createTenant();
      const fixture = await createResources(ctx(), owner);
      const doc = (await ctx().request('GET', '/openapi.json')).body;
      const port = await listen(ctx());
      let sent = 0;
      for (const op of operationsOf(doc)) {
        const path = op.path.replace('{id}', idFor(op.path, fixture) ?? 'missing');
        for (const target of spellingsOf(path)) {
          const body = op.method === 'POST' || op.method === 'PATCH' ? '{}' : undefined;
          const res = await send(port, op.method, target, {}, body);
          assert.ok(
            [400, 401, 404].includes(res.status),
            `${op.method} ${target}: ${res.status} ${res.body.slice(0, 200)}`,
          );
          const parsed = JSON.parse(res.body);
          assert.equal(typeof parsed.errorCode, 'string', `${op.method} ${target}: ${res.body}`);
          sent++;
        }
        // With credentials, the canonical spelling works, so the cases above were refused for the right reason.
        if (op.method === 'GET') assert.equal((await send(port, 'GET', path, owner.headers)).status, 200, path);
      }
      assert.ok(sent > 200, `${sent} requests`);
    });

    it('answers an unknown path under /api/v1 with 401 before 404, so it tells nothing to a stranger', async () => {
      const port = await listen(ctx());
      assert.equal((await send(port, 'GET', '/api/v1/nothing-here')).status, 401);
      assert.equal((await send(port, 'GET', '/%61pi/v1/nothing-here')).status, 401);
    });
  },
  { rateLimiter: () => new MemoryRateLimiter({ ratePerSecond: 1, burst: 1_000_000 }) },
);

describeEachBackend(
  'Rate limiting whatever the spelling of the path',
  (ctx) => {
    it('limits encoded and absolute-form spellings like the plain one', async () => {
      const owner = await ctx().createTenant();
      const port = await listen(ctx());
      for (const target of ['/%61pi/v1/orders', 'HTTP://LOCALHOST/api/v1/orders', '/ap%69/v1/items']) {
        const statuses: number[] = [];
        for (let i = 0; i < 12; i++) statuses.push((await send(port, 'GET', target, owner.headers)).status);
        assert.ok(statuses.includes(429), `${target}: ${statuses.join(',')}`);
        assert.ok(
          statuses.every((s) => s === 200 || s === 429),
          `${target}: ${statuses.join(',')}`,
        );
        const strangers: number[] = [];
        for (let i = 0; i < 12; i++) strangers.push((await send(port, 'GET', target)).status);
        assert.ok(strangers.includes(429), `${target} without credentials: ${strangers.join(',')}`);
      }
    });
  },
  { rateLimiter: () => new MemoryRateLimiter({ ratePerSecond: 0.001, burst: 5 }) },
);
