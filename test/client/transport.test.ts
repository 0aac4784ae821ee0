// The client's calls against a scripted server: per-call options, which answers are retried and how,
// the error classes, User-Agent and hooks.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it, mock } from 'node:test';
import { inspect } from 'node:util';
import {
  createSupplylineClient,
  SupplylineApiError,
  SupplylineConnectionError,
  SupplylineError,
  SupplylineTimeoutError,
  VERSION,
} from '../../clients/typescript/src/index.ts';
import { cutBody, json, scriptedServer } from './scripted-server.ts';

const tenant = { businessId: 'bus_1', apiKey: 'sl_live_x' };
const buyer = { id: 'phm_1', name: 'Acme' };

describe('@supplyline/client calls', async () => {
  // Each test queues the statuses its next requests get; 'cut' drops the body mid-way, 'drop' the connection.
  const script: Array<number | 'cut' | 'drop' | 'hang' | 'slow'> = [];
  const server = await scriptedServer((req, res) => {
    const next = script.shift() ?? 200;
    if (next === 'drop') return void req.socket.destroy();
    if (next === 'hang') return;
    // An empty page of the feed after half a second, as a long poll answers.
    if (next === 'slow')
      return void setTimeout(() => json(res, 200, { items: [], lastSequence: 7, hasMore: false }), 500);
    if (next === 'cut') return cutBody(res, buyer);
    if (next === 429)
      return json(res, 429, { errorCode: 'RATE_LIMITED', message: 'slow down' }, { 'retry-after': '1' });
    if (next === 400)
      return json(res, 400, {
        errorCode: 'VALIDATION_ERROR',
        message: 'Validation failed',
        requestId: 'req_1',
        fieldErrors: { 'buyer.name': 'Required' },
      });
    if (next >= 400) return json(res, next, { errorCode: 'INTERNAL', message: 'failed' });
    json(res, next, buyer, { etag: '"1"' });
  });
  after(() => server.close());
  const client = (extra: Parameters<typeof createSupplylineClient>[0] extends infer O ? Partial<O> : never = {}) =>
    createSupplylineClient({ baseUrl: server.base, ...tenant, retry: { baseDelayMs: 5 }, ...extra });
  const since = (n: number) => server.seen.slice(n);

  it('retries 500, 502, 503, 504 and a dropped connection with the same Idempotency-Key', async () => {
    const start = server.seen.length;
    script.push(500, 502, 'drop', 503);
    assert.deepEqual(await client().buyers.create({ buyer: { name: 'Acme' } }), buyer);
    script.push(504);
    await client().buyers.create({ buyer: { name: 'Acme' } });
    const keys = since(start).map((s) => s.headers['idempotency-key']);
    assert.equal(keys.length, 7);
    assert.equal(new Set(keys.slice(0, 5)).size, 1, 'one key for the first call and its retries');
    assert.equal(keys[5], keys[6]);
    assert.notEqual(keys[0], keys[5], 'a new call, a new key');
  });

  it("sends the caller's idempotencyKey, so a process that restarts and retries cannot create a duplicate", async () => {
    const start = server.seen.length;
    script.push(502);
    await client().buyers.create({ buyer: { name: 'Acme' } }, { idempotencyKey: 'import-42-buyer' });
    await client().buyers.patch('phm_1', { buyer: { name: 'Acme 2' } }, { idempotencyKey: 'import-42-rename' });
    assert.deepEqual(
      since(start).map((s) => s.headers['idempotency-key']),
      ['import-42-buyer', 'import-42-buyer', 'import-42-rename'],
    );
  });

  it('retries a cut body, and honours Retry-After', async () => {
    const start = server.seen.length;
    script.push('cut', 429);
    const t0 = Date.now();
    const { data } = await client().buyers.get('phm_1');
    assert.deepEqual(data, buyer);
    assert.equal(since(start).length, 3);
    assert.ok(since(start)[2].at - since(start)[1].at >= 950, 'waited the second Retry-After asked for');
    assert.ok(Date.now() - t0 >= 950);
  });

  it('backs off exponentially, with jitter up to the doubled delay', async () => {
    const random = mock.method(Math, 'random', () => 1);
    try {
      const start = server.seen.length;
      script.push(503, 503, 503);
      await client({ retry: { baseDelayMs: 100 } }).buyers.get('phm_1');
      const gaps = since(start)
        .slice(1)
        .map((s, i) => s.at - since(start)[i].at);
      for (const [i, gap] of gaps.entries()) {
        assert.ok(gap >= 100 * 2 ** i - 5 && gap < 100 * 2 ** i + 150, `gap ${i} was ${gap} ms`);
      }
    } finally {
      random.mock.restore();
    }
  });

  it('throws a SupplylineApiError with the status, code, request id and field errors, without retrying a 4xx', async () => {
    const start = server.seen.length;
    script.push(400);
    await assert.rejects(client().buyers.create({ buyer: { name: '' } }), (error: unknown) => {
      assert.ok(error instanceof SupplylineApiError && error instanceof SupplylineError);
      assert.deepEqual(
        [error.status, error.errorCode, error.requestId, error.fieldErrors],
        [400, 'VALIDATION_ERROR', 'req_1', { 'buyer.name': 'Required' }],
      );
      return true;
    });
    assert.equal(since(start).length, 1);
    script.push(500, 500);
    await assert.rejects(
      client({ retry: { maxAttempts: 2, baseDelayMs: 1 } }).buyers.get('phm_1'),
      (error: unknown) => error instanceof SupplylineApiError && error.status === 500,
    );
  });

  /** A client of a port nothing listens on, retrying once. */
  const unreachable = () =>
    createSupplylineClient({ baseUrl: 'http://127.0.0.1:1', ...tenant, retry: { maxAttempts: 2, baseDelayMs: 1 } });

  it('throws SupplylineConnectionError when no attempt reaches the server', async () => {
    const dead = unreachable();
    await assert.rejects(
      dead.buyers.page(),
      (error: unknown) =>
        error instanceof SupplylineConnectionError && error instanceof SupplylineError && error.cause instanceof Error,
    );
  });

  it('tells the Idempotency-Key a write sent in the error it ends with, so the caller can send it again', async () => {
    const dead = unreachable();
    await assert.rejects(
      dead.buyers.create({ buyer: { name: 'Acme' } } as never, { idempotencyKey: 'key-1' }),
      (error: unknown) => error instanceof SupplylineConnectionError && error.idempotencyKey === 'key-1',
    );
    const start = server.seen.length;
    script.push(400);
    await assert.rejects(
      client().buyers.create({ buyer: { name: '' } } as never),
      (error: unknown) =>
        error instanceof SupplylineApiError && error.idempotencyKey === since(start)[0].headers['idempotency-key'],
    );
    script.push(400);
    await assert.rejects(
      client().buyers.page(),
      (error: unknown) => error instanceof SupplylineApiError && error.idempotencyKey === undefined,
    );
  });

  it('logs an API error as its status, code and request id, with the answer kept out of sight', async () => {
    script.push(400);
    const error = await client()
      .buyers.page()
      .then(
        () => assert.fail('a 400 is thrown'),
        (e: unknown) => e as SupplylineApiError,
      );
    const logged = inspect(error);
    assert.match(logged, /status: 400/);
    assert.match(logged, /errorCode: 'VALIDATION_ERROR'/);
    // The whole Response (its headers map, body stream and internals) made one log line dozens.
    assert.doesNotMatch(logged, /Response|ReadableStream|bodyUsed/);
    assert.equal(error.response?.status, 400, 'still there for its headers');
    assert.equal(Object.keys(error).includes('response'), false);
  });

  it("ends a call at its timeout with SupplylineTimeoutError, and an aborted call with the signal's reason", async () => {
    script.push('hang');
    const t0 = Date.now();
    await assert.rejects(
      client().buyers.page({}, { timeout: 300 }),
      (error: unknown) =>
        error instanceof SupplylineTimeoutError && error instanceof SupplylineError && error.timeoutMs === 300,
    );
    assert.ok(Date.now() - t0 < 2000);
    script.push('hang');
    const reason = new Error('the user left');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 100);
    await assert.rejects(client().buyers.page({}, { signal: controller.signal }), (error: unknown) => error === reason);
  });

  it('sends the raw openapi-fetch client through the same retries, and hands it errors as answers', async () => {
    const start = server.seen.length;
    script.push(503);
    const ok = await client().raw.GET('/api/v1/buyers/{id}', { params: { path: { id: 'phm_1' } } });
    assert.deepEqual(ok.data, buyer);
    script.push(400);
    const refused = await client().raw.POST('/api/v1/buyers', { body: { buyer: { name: '' } } });
    assert.equal(refused.response.status, 400);
    assert.equal(refused.error?.errorCode, 'VALIDATION_ERROR');
    const seen = since(start);
    assert.equal(seen.length, 3);
    assert.match(String(seen[2].headers['idempotency-key']), /.+/, 'a raw POST gets a key too');
    // Each credential once: node joins a header sent twice with ", ", which the API refuses as malformed.
    for (const request of seen) {
      assert.equal(request.headers['x-api-key'], tenant.apiKey);
      assert.equal(request.headers['x-business-id'], tenant.businessId);
    }
    assert.deepEqual(JSON.parse(seen[2].body), { buyer: { name: '' } });
  });

  it('takes a 404 to a repeated DELETE for done: the attempt before may have deleted it', async () => {
    const start = server.seen.length;
    script.push('drop', 404);
    assert.equal(await client().items.delete('itm_1'), undefined);
    assert.equal(since(start).length, 2);
    // A first attempt's 404 is the caller's to know.
    script.push(404);
    await assert.rejects(client().items.delete('itm_1'), (error: unknown) => error instanceof SupplylineApiError);
  });

  it("gives a page of the feed that waits its wait and 15 s more, past the client's timeout", async () => {
    script.push('slow');
    const page = await client({ timeout: 200 }).events.list({ after: 7, wait: 1 });
    assert.equal(page.lastSequence, 7);
    script.push('slow');
    await assert.rejects(
      client({ timeout: 200 }).events.list({ after: 7 }),
      (error: unknown) => error instanceof SupplylineTimeoutError,
    );
  });

  it('refuses a follow whose polls would not wait (waitSeconds outside 1..30) before it sends anything', async () => {
    const start = server.seen.length;
    for (const waitSeconds of [0, 31, 0.5])
      await assert.rejects(async () => {
        for await (const _ of client().events.follow({ after: 0, waitSeconds })) break;
      }, RangeError);
    assert.equal(since(start).length, 0);
  });

  it('sends User-Agent supplyline-node/<version>, per-call headers, and calls the hooks on every attempt', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../clients/typescript/package.json', import.meta.url), 'utf8'));
    assert.equal(VERSION, pkg.version);
    const start = server.seen.length;
    const requests: string[] = [];
    const statuses: number[] = [];
    script.push(503);
    await client({
      hooks: {
        onRequest: (request) => {
          requests.push(request.url);
          const headers = new Headers(request.headers);
          headers.set('x-trace', 't1');
          return new Request(request, { headers });
        },
        onResponse: (response) => {
          statuses.push(response.status);
        },
      },
    }).buyers.page({ limit: 5 }, { headers: { 'x-tenant-note': 'n1' } });
    const [first] = since(start);
    assert.equal(first.headers['user-agent'], `supplyline-node/${pkg.version}`);
    assert.equal(first.headers['x-tenant-note'], 'n1');
    assert.equal(first.headers['x-trace'], 't1', 'onRequest may replace the request');
    assert.equal(first.headers['x-business-id'], 'bus_1');
    assert.deepEqual(statuses, [503, 200]);
    assert.equal(requests.length, 2);
    assert.match(requests[0], /limit=5/);
  });
});
