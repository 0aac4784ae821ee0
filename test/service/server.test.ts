import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import { TYPESCRIPT } from '../helpers/typescript.ts';

// The test runner marks its children with NODE_TEST_CONTEXT; a server started from here must not inherit it.
const { NODE_TEST_CONTEXT: _ignored, ...baseEnv } = process.env;
const dir = mkdtempSync(join(tmpdir(), 'supplyline-server-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  output: () => string;
  base: string;
}

/** The server from source, or with `npm start`: the newcomer's command, which builds dist/ and runs it. */
function start(env: Record<string, string>, { npm = false } = {}): Promise<Started> {
  const [command, args] = npm ? ['npm', ['start']] : [process.execPath, [...TYPESCRIPT, 'src/server.ts']];
  const child = spawn(command, args, {
    env: { ...baseEnv, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    // Generous: on a loaded 2-core machine a first start (build, migrations, demo data) can take a
    // while; a server that never says it listens is still caught, and killed.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}`));
    }, 60_000);
    const check = () => {
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, output: () => out, base: m[1] });
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}:\n${out}`));
    });
  });
}

const exited = (child: ChildProcess) =>
  new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));

describe('npm start (src/server.ts)', () => {
  it('builds and starts with npm start, creates the database, prints a working demo key once, and shuts down cleanly on SIGTERM', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'nested', 'supplyline.db')}` };
    const first = await start(env, { npm: true });
    const businessId = first.output().match(/X-Business-Id: (bus_\w+)/)?.[1];
    const apiKey = first.output().match(/X-API-Key:\s+(sl_live_[0-9A-Za-z]{36})/)?.[1];
    assert.ok(businessId && apiKey, first.output());
    assert.match(first.output(), /curl -s http:\/\/127\.0\.0\.1:\d+\/api\/v1\/items/);
    assert.match(first.output(), /\/docs/);
    const res = await fetch(`${first.base}/api/v1/items`, {
      headers: { 'x-business-id': businessId, 'x-api-key': apiKey },
    });
    assert.equal(res.status, 200);
    first.child.kill('SIGTERM');
    assert.equal(await exited(first.child), 0);

    const second = await start(env, { npm: true });
    assert.ok(!/X-API-Key/.test(second.output()), 'the demo key is printed only on the first start');
    second.child.kill('SIGINT');
    assert.equal(await exited(second.child), 0);
  });

  it('finishes a request that is in flight when SIGTERM arrives, then exits 0', async () => {
    const server = await start({ DATABASE_URL: `sqlite:${join(dir, 'inflight.db')}` });
    const body = '{"pending":true}';
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        `${server.base}/healthz`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } },
        (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 5));
      // The server holds the request (headers read, body pending) when the signal arrives.
      setTimeout(() => {
        server.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(5)), 300);
      }, 300);
    });
    const response = await answered;
    assert.equal(response.status, 404);
    assert.equal(JSON.parse(response.text).errorCode, 'NOT_FOUND');
    assert.equal(await exited(server.child), 0);
  });

  it('on SIGTERM with SHUTDOWN_DRAIN_MS, fails /readyz at once and goes on serving until the drain ends, then exits 0', async () => {
    const server = await start({ DATABASE_URL: `sqlite:${join(dir, 'drain.db')}`, SHUTDOWN_DRAIN_MS: '1500' });
    assert.equal((await fetch(`${server.base}/readyz`)).status, 200);
    const signalled = Date.now();
    const exit = exited(server.child);
    server.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const ready = await fetch(`${server.base}/readyz`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), { status: 'unavailable', reason: 'shutting down' });
    assert.equal(
      (await fetch(`${server.base}/livez`)).status,
      200,
      'still alive, and still serving, while the load balancer drains it',
    );
    assert.equal((await fetch(`${server.base}/api/v1/items`)).status, 401);
    assert.equal(await exit, 0);
    assert.ok(Date.now() - signalled >= 1400, `it served for the drain (${Date.now() - signalled} ms)`);
  });

  /** The server started with `env` on top of the base: its exit code and what it wrote on stderr. */
  const startWith = async (env: Record<string, string>) => {
    const child = spawn(process.execPath, [...TYPESCRIPT, 'src/server.ts'], {
      env: { ...baseEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    return { code: await exited(child), err };
  };

  it('exits 1 with a clear message on bad configuration', async () => {
    const { code, err } = await startWith({ PORT: 'abc' });
    assert.equal(code, 1);
    assert.match(err, /PORT must be a whole number/);
  });

  it('exits 1 with the same clear message for a bad PASSWORD_HASH_COST, not a stack trace', async () => {
    const { code, err } = await startWith({ PASSWORD_HASH_COST: '99' });
    assert.equal(code, 1);
    assert.match(err, /^Configuration error: PASSWORD_HASH_COST must be a whole number from 14 to 20, got '99'$/m);
    assert.doesNotMatch(err, /\n\s+at /, 'no stack trace');
  });
});
