import { newApiKey } from '../../src/businesses/key-format.ts';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { backends, createTestDatabase } from '../helpers/context.ts';
import {
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  orderBody,
  startServer,
  type Server,
  type Tenant,
} from '../reliability/helpers.ts';

// The HTTP protocol edges (issue 13, part 5), against real server processes on both backends.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(
  base: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer; agent?: Agent },
): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers,
        agent: options.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A client that is still sending its body, a chunk at a time, when the server answers, as curl and
 * most HTTP clients do: it finishes sending before it reads. A reset while it sends is a failure.
 */
function sendSlowly(base: string, path: string, headers: Record<string, string>, total: number): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    let answer: Answer | null = null;
    let finished = false;
    const settle = () => {
      if (answer && finished) resolve(answer);
    };
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: { ...headers, 'content-length': String(total) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => {
          answer = { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') };
          settle();
        });
      },
    );
    req.on('error', (error) => reject(new Error(`the client could not finish sending: ${error.message}`)));
    req.on('finish', () => {
      finished = true;
      settle();
    });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const next = () => {
      if (sent >= total) return req.end();
      const part = chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += part.length;
      req.write(part, () => setTimeout(next, 3));
    };
    next();
  });
}

function assertErrorBody(answer: Answer, status: number, code: string) {
  assert.equal(answer.status, status, answer.body);
  const body = JSON.parse(answer.body);
  assert.equal(body.errorCode, code);
  assert.equal(body.error, body.message);
  assert.equal(body.requestId, answer.headers['x-request-id']);
}

/** Writes raw bytes and collects everything the server sends until it closes the connection. */
function rawExchange(port: number, host: string, text: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const socket = connect(port, host, () => socket.write(text));
    socket.on('data', (d) => {
      out += d;
      if (out.includes('\r\n\r\n') && /content-length: (\d+)/i.test(out)) {
        const n = Number(/content-length: (\d+)/i.exec(out)![1]);
        if (Buffer.byteLength(out.split('\r\n\r\n').slice(1).join('\r\n\r\n')) >= n) socket.end();
      }
    });
    socket.on('close', () => resolve(out));
    socket.on('error', () => resolve(out));
  });
}

const exited = (server: Server) =>
  new Promise<number | null>((resolve) => {
    if (server.child.exitCode !== null) return resolve(server.child.exitCode);
    server.child.once('exit', (code) => resolve(code));
  });

for (const backend of backends) {
  describe(`[${backend}] HTTP protocol edges on a real server`, () => {
    let databaseUrl = '';
    let drop: () => Promise<void> = async () => {};
    let tenant: Tenant;
    let server: Server;
    before(async () => {
      if (backend === 'postgres') {
        const db = await createPgDatabase();
        databaseUrl = db.url;
        drop = db.drop;
      } else {
        const dir = mkdtempSync(join(tmpdir(), 'supplyline-protocol-'));
        databaseUrl = `sqlite:${join(dir, 'p.db')}`;
        drop = async () => rmSync(dir, { recursive: true, force: true });
      }
      tenant = await cliCreateBusiness(databaseUrl);
      server = await startServer({ DATABASE_URL: databaseUrl });
    });
    after(async () => {
      await server?.kill();
      await drop();
    });

    it('closes a client that trickles its headers within about 15 s, while a normal client is served meanwhile', {
      timeout: 60_000,
    }, async () => {
      const url = new URL(server.base);
      const started = Date.now();
      const closedAfter = new Promise<number>((resolve) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
          const drip = setInterval(() => {
            if (!socket.destroyed) socket.write(`X-Drip-${Date.now()}: 1\r\n`);
          }, 2000);
          socket.on('close', () => {
            clearInterval(drip);
            resolve(Date.now() - started);
          });
        });
        socket.on('error', () => {});
        socket.resume();
      });
      const agent = new Agent({ keepAlive: true });
      let served = 0;
      while (Date.now() - started < 4000) {
        assert.equal((await send(server.base, { path: '/api/v1/items', headers: tenant.headers, agent })).status, 200);
        served++;
        await new Promise((r) => setTimeout(r, 200));
      }
      agent.destroy();
      const ms = await closedAfter;
      assert.ok(ms < 16_000, `the slow client was closed after ${ms} ms`);
      assert.ok(ms >= 9000, `the slow client was closed after ${ms} ms, before the headers timeout`);
      assert.ok(served > 5);
    });

    it('takes an import upload its client cuts off as the client going away, not as the database being down', async () => {
      const url = new URL(server.base);
      const line = `${JSON.stringify({ op: 'create', resource: 'buyer', data: { buyer: { name: 'Cut off' } } })}\n`;
      const head =
        `POST /api/v1/imports HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n` +
        Object.entries(tenant.headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        `Content-Length: ${line.length * 100_000}\r\n\r\n`;
      await new Promise<void>((resolve) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write(head);
          // Part of the file, then a reset (RST), as a client killed mid-upload leaves it.
          socket.write(line.repeat(2000), () => setTimeout(() => socket.resetAndDestroy(), 300));
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      });
      // The next request is served; the server's log has no outage in it.
      assert.equal((await send(server.base, { path: '/api/v1/imports', headers: tenant.headers })).status, 200);
      await new Promise((r) => setTimeout(r, 300));
      assert.doesNotMatch(server.output(), /database unavailable/);
    });

    it('lets a client that sends a body over the limit read its 413 instead of a reset', async () => {
      const big = Buffer.alloc(3 * 1024 * 1024, 'x');
      const withLength = await send(server.base, {
        method: 'POST',
        path: '/api/v1/items',
        headers: { ...tenant.headers, 'content-type': 'application/json', 'content-length': String(big.length) },
        body: big,
      });
      assertErrorBody(withLength, 413, 'PAYLOAD_TOO_LARGE');
      // The server reads the rest instead of closing on unread data (which resets the connection).
      assert.notEqual(withLength.headers.connection, 'close');
      const chunked = await send(server.base, {
        method: 'POST',
        path: '/api/v1/items',
        headers: { ...tenant.headers, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        body: big,
      });
      assertErrorBody(chunked, 413, 'PAYLOAD_TOO_LARGE');
      // Still sending when the answer comes: the rest is read and discarded, so the 413 arrives, five times out of five.
      for (let i = 0; i < 5; i++) {
        assertErrorBody(
          await sendSlowly(
            server.base,
            '/api/v1/items',
            { ...tenant.headers, 'content-type': 'application/json' },
            3 * 1024 * 1024,
          ),
          413,
          'PAYLOAD_TOO_LARGE',
        );
      }
      // The connection is still good for the next request.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      assertErrorBody(
        await send(server.base, {
          method: 'POST',
          path: '/api/v1/items',
          headers: { ...tenant.headers, 'content-type': 'application/json' },
          body: Buffer.alloc(1024 * 1024 + 10, 'x'),
          agent,
        }),
        413,
        'PAYLOAD_TOO_LARGE',
      );
      assert.equal((await send(server.base, { path: '/api/v1/items', headers: tenant.headers, agent })).status, 200);
      agent.destroy();
    });

    it('answers oversized headers (431) and malformed or unknown methods with the standard error body', async () => {
      assertErrorBody(
        await send(server.base, { path: '/api/v1/items', headers: { ...tenant.headers, 'x-big': 'x'.repeat(20_000) } }),
        431,
        'HEADERS_TOO_LARGE',
      );
      const url = new URL(server.base);
      for (const line of ['FOO /api/v1/orders HTTP/1.1', 'GET /api/v1/orders HTTP/9.9', 'G@T / HTTP/1.1']) {
        const raw = await new Promise<string>((resolve) => {
          let text = '';
          const socket = connect(Number(url.port), url.hostname, () => socket.write(`${line}\r\nHost: x\r\n\r\n`));
          socket.on('data', (d) => {
            text += d;
          });
          socket.on('close', () => resolve(text));
          socket.on('error', () => resolve(text));
        });
        const [head, body] = raw.split('\r\n\r\n');
        assert.match(head, /^HTTP\/1\.1 4\d\d /, `${line}: ${raw}`);
        const parsed = JSON.parse(body);
        assert.equal(typeof parsed.errorCode, 'string', raw);
        assert.match(head, new RegExp(`x-request-id: ${parsed.requestId}`, 'i'));
      }
      for (const method of ['PROPFIND', 'PURGE', 'TRACE', 'MKCOL']) {
        const res = await send(server.base, { method, path: '/api/v1/orders', headers: tenant.headers });
        assert.ok(res.status >= 400 && res.status < 500, `${method}: ${res.status} ${res.body}`);
        if (res.body) assert.equal(typeof JSON.parse(res.body).errorCode, 'string', `${method}: ${res.body}`);
      }
    });

    it('answers Expect other than 100-continue with a 417 and the standard error body', async () => {
      const url = new URL(server.base);
      const raw = await rawExchange(
        Number(url.port),
        url.hostname,
        'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n',
      );
      const [head, body] = raw.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 417 /);
      const parsed = JSON.parse(body);
      assert.equal(parsed.errorCode, 'EXPECTATION_FAILED');
      assert.match(head, new RegExp(`x-request-id: ${parsed.requestId}`, 'i'));
    });

    it('gives one answer per request, even when the body of an answered request then times out', {
      timeout: 30_000,
    }, async () => {
      const quick = await startServer({
        DATABASE_URL: databaseUrl,
        HEADERS_TIMEOUT_MS: '1000',
        REQUEST_TIMEOUT_MS: '2000',
      });
      try {
        const url = new URL(quick.base);
        const raw = await new Promise<string>((resolve) => {
          let text = '';
          const socket = connect(Number(url.port), url.hostname, () => {
            socket.write(
              'PATCH /api/v1/orders/ord_01jd5x8m2k3n4p5q6r7s8t9v0w HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
            );
          });
          const drip = setInterval(() => {
            if (!socket.destroyed) socket.write(' ');
          }, 500);
          socket.on('data', (d) => {
            text += d;
          });
          socket.on('close', () => {
            clearInterval(drip);
            resolve(text);
          });
          socket.on('error', () => {});
        });
        const statusLines = raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
        assert.deepEqual(statusLines, ['HTTP/1.1 401'], raw);
      } finally {
        await quick.kill();
      }
    });

    it('over a real socket: HEAD answers like GET without a body, and Content-Type variants give 201 or 415, never 500', async () => {
      const { variantId, buyerId } = await createCatalogue(server.base, tenant);
      const created = await send(server.base, {
        method: 'POST',
        path: `/api/v1/buyers/${buyerId}/orders`,
        headers: { ...tenant.headers, 'content-type': 'application/json' },
        body: JSON.stringify(orderBody(variantId)),
      });
      assert.equal(created.status, 201, created.body);
      const orderId = JSON.parse(created.body).id;
      for (const path of [`/api/v1/orders/${orderId}`, '/api/v1/orders', '/api/v1/items', '/healthz']) {
        for (let i = 0; i < 2; i++) {
          // HEAD first, before any GET has rendered (and cached) the resource.
          const head = await send(server.base, { method: 'HEAD', path, headers: tenant.headers });
          const get = await send(server.base, { path, headers: tenant.headers });
          assert.equal(head.status, get.status, `HEAD ${path}`);
          assert.equal(head.body, '');
          assert.equal(head.headers.etag, get.headers.etag);
        }
      }
      const item = JSON.stringify({ item: { name: 'Case' }, variants: [{ currency: 'AUD', price: 1 }] });
      for (const [ct, status] of [
        ['Application/JSON', 201],
        ['APPLICATION/JSON;CHARSET=UTF-8', 201],
        ['application/json;;', 415],
        ['application/json; charset=latin1', 415],
        ['application/json; charset=utf-16', 415],
        ['text/plain', 415],
      ] as const) {
        const res = await send(server.base, {
          method: 'POST',
          path: '/api/v1/items',
          headers: { ...tenant.headers, 'content-type': ct },
          body: item,
        });
        assert.equal(res.status, status, `${ct}: ${res.body}`);
      }
    });

    // PostgreSQL only (SQLite has no server to end connections): registered there alone, not skipped here.
    if (backend === 'postgres')
      it('survives PostgreSQL ending its connections under load: 200 or 503, never a crash, and recovers', async () => {
        const { variantId, buyerId } = await createCatalogue(server.base, tenant);
        const created = await send(server.base, {
          method: 'POST',
          path: `/api/v1/buyers/${buyerId}/orders`,
          headers: { ...tenant.headers, 'content-type': 'application/json' },
          body: JSON.stringify(orderBody(variantId)),
        });
        const orderId = JSON.parse(created.body).id;
        const database = new URL(databaseUrl).pathname.slice(1);
        const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
        await admin.connect();
        const statuses: Record<number, number> = {};
        let stop = false;
        const agent = new Agent({ keepAlive: true, maxSockets: 4 });
        const load = Promise.all(
          Array.from({ length: 4 }, async (_, w) => {
            while (!stop) {
              const res = await send(server.base, {
                path: w % 2 ? `/api/v1/orders/${orderId}` : '/api/v1/orders?limit=20',
                headers: tenant.headers,
                agent,
              }).catch(() => ({ status: 0 }));
              statuses[res.status] = (statuses[res.status] ?? 0) + 1;
            }
          }),
        );
        for (let i = 0; i < 15; i++) {
          await admin.query(
            'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
            [database],
          );
          await new Promise((r) => setTimeout(r, 100));
        }
        stop = true;
        await load;
        await admin.end();
        agent.destroy();
        assert.equal(server.child.exitCode, null, `the server exited: ${server.output().slice(-2000)}`);
        assert.deepEqual(
          Object.keys(statuses).filter((s) => s !== '200' && s !== '503'),
          [],
          JSON.stringify(statuses),
        );
        assert.equal(
          (await send(server.base, { path: `/api/v1/orders/${orderId}`, headers: tenant.headers })).status,
          200,
        );
      });

    it('on SIGTERM under load: every request already sent gets its normal answer, idle connections close at once, and it exits within 10 s', {
      timeout: 60_000,
    }, async () => {
      const { variantId, buyerId } = await createCatalogue(server.base, tenant);
      const agent = new Agent({ keepAlive: true, maxSockets: 40 });
      // 40 keep-alive connections, open and warm.
      await Promise.all(
        Array.from({ length: 40 }, () =>
          send(server.base, { path: '/api/v1/orders?limit=5', headers: tenant.headers, agent }),
        ),
      );
      const idleAgent = new Agent({ keepAlive: true, maxSockets: 1 });
      await send(server.base, { path: '/healthz', agent: idleAgent });
      const idleSocket = (Object.values(idleAgent.freeSockets)[0] ?? [])[0];
      assert.ok(idleSocket, 'an idle keep-alive connection');
      let signalledAt = 0;
      const idleClosed = new Promise<number>((resolve) => idleSocket!.once('close', () => resolve(Date.now())));

      const results: Array<{ sentBeforeSignal: boolean; status: number; error?: string; close: boolean }> = [];
      const worker = async (w: number) => {
        for (let i = 0; signalledAt === 0 || i === 0; i++) {
          const sentBeforeSignal = signalledAt === 0;
          const write = (w + i) % 3 === 0;
          try {
            const res = await send(
              server.base,
              write
                ? {
                    method: 'POST',
                    path: `/api/v1/buyers/${buyerId}/orders`,
                    headers: { ...tenant.headers, 'content-type': 'application/json' },
                    body: JSON.stringify(orderBody(variantId)),
                    agent,
                  }
                : { path: '/api/v1/orders?limit=20', headers: tenant.headers, agent },
            );
            results.push({ sentBeforeSignal, status: res.status, close: res.headers.connection === 'close' });
          } catch (error) {
            results.push({ sentBeforeSignal, status: 0, error: (error as Error).message, close: false });
          }
        }
      };
      const running = Promise.all(Array.from({ length: 40 }, (_, w) => worker(w)));
      await new Promise((r) => setTimeout(r, 800));
      const exit = exited(server);
      signalledAt = Date.now();
      server.child.kill('SIGTERM');
      await running;
      const code = await exit;
      const exitMs = Date.now() - signalledAt;
      const idleMs = (await idleClosed) - signalledAt;
      agent.destroy();
      idleAgent.destroy();

      const before = results.filter((r) => r.sentBeforeSignal);
      const bad = before.filter((r) => r.status !== 200 && r.status !== 201);
      assert.deepEqual(
        bad,
        [],
        `${bad.length} of ${before.length} requests sent before the signal did not get their normal answer`,
      );
      assert.ok(before.length > 40);
      assert.equal(code, 0, server.output());
      assert.ok(exitMs < 10_000, `exited ${exitMs} ms after SIGTERM`);
      // "At once" against the keep-alive timeout (72 s) it would otherwise wait for; a loaded machine
      // takes a moment to deliver the signal and run the handler.
      assert.ok(idleMs < 3000, `the idle connection was closed ${idleMs} ms after SIGTERM`);
    });
  });

  describe(`[${backend}] API requests during a database outage`, () => {
    it('answer 503 with Retry-After and the standard error body, never 500', async () => {
      const other = await createTestDatabase(backend);
      const config = loadConfig({ RATE_LIMIT_RPS: '0' });
      await other.handle.close();
      await check(await createApp({ db: other.handle.db, config, rateLimiter: null }));
      await other.drop();
      if (backend === 'postgres') {
        // Nothing listens on port 1: every connection attempt is refused, as when PostgreSQL is down.
        const refused = createDatabase('postgres://postgres@127.0.0.1:1/none');
        await check(await createApp({ db: refused.db, config, rateLimiter: null }));
        await refused.close();
      }
    });

    async function check(app: Awaited<ReturnType<typeof createApp>>) {
      try {
        for (const [method, url] of [
          ['GET', '/api/v1/orders'],
          ['POST', '/api/v1/items'],
          ['GET', '/api/v1/items/itm_01jd5x8m2k3n4p5q6r7s8t9v0w'],
        ]) {
          const res = await app.inject({
            method: method as 'GET',
            url,
            headers: {
              'x-business-id': 'bus_01jd5x8m2k3n4p5q6r7s8t9v0w',
              'x-api-key': newApiKey(),
              'content-type': 'application/json',
            },
            payload: method === 'POST' ? '{}' : undefined,
          });
          assert.equal(res.statusCode, 503, `${method} ${url}: ${res.body}`);
          assert.equal(res.headers['retry-after'], '2');
          const body = res.json();
          assert.equal(body.errorCode, 'SERVICE_UNAVAILABLE');
          assert.equal(body.requestId, res.headers['x-request-id']);
          assert.ok(!/sqlite|postgres|ECONN|\.ts/i.test(res.body), res.body);
        }
      } finally {
        await app.close();
      }
    }
  });
}
