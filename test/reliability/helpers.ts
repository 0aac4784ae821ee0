import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startCommand } from '../../bench/server.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

const run = promisify(execFile);

/** This checkout's sources run as Node can; another commit's (`cwd`) may predate erasable-only syntax, so tsx runs them. */
const typescriptIn = (cwd?: string) => (cwd ? ['--import', 'tsx'] : TYPESCRIPT);

// The test runner marks its children with NODE_TEST_CONTEXT; a server started from here must not inherit it.
const { NODE_TEST_CONTEXT: _ignored, ...baseEnv } = process.env;
export { baseEnv };

export const PG_URL = process.env.TEST_DATABASE_URL;
export const REDIS_URL = process.env.TEST_REDIS_URL;

/**
 * The skip reason when a service is missing, or null when the test can run. Under CI=true a missing
 * service is a failure, never a skip.
 */
export function missing(...needs: Array<'postgres' | 'redis'>): string | null {
  const absent = needs.filter((n) => (n === 'postgres' ? !PG_URL : !REDIS_URL));
  if (absent.length === 0) return null;
  const note = `skipped: set ${absent.map((n) => (n === 'postgres' ? 'TEST_DATABASE_URL' : 'TEST_REDIS_URL')).join(' and ')} to run this part`;
  if (process.env.CI === 'true') throw new Error(`CI=true but ${note}`);
  console.log(`# note: ${note}`);
  return note;
}

export interface Server {
  child: ChildProcess;
  base: string;
  output(): string;
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });

/**
 * Starts `count` servers at once (with `start`: bundles, say). If one fails to start, the others are killed before the error is
 * thrown: a server left running would hold the test process open, and CI with it.
 */
export async function startServers(
  count: number,
  env: Record<string, string>,
  start: (env: Record<string, string>) => Promise<Server> = startServer,
): Promise<Server[]> {
  const results = await Promise.allSettled(Array.from({ length: count }, () => start(env)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return results.map((r) => (r as PromiseFulfilledResult<Server>).value);
  await Promise.all(results.map((r) => (r.status === 'fulfilled' ? r.value.kill() : undefined)));
  throw failed.reason;
}

/**
 * Spawns a server process (`node` with `args`) on a free port and waits for "listening on": the
 * one way every reliability test starts a server, whatever it runs.
 */
export function spawnServer(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Server> {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...baseEnv, PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_RPS: '0', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const append = (d: Buffer) => {
    out = (out + d).slice(-200_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}`));
    }, options.timeoutMs ?? 60_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}:\n${out}`));
    };
    child.once('exit', onExit);
    child.stdout!.on('data', function check() {
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (!m) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout!.off('data', check);
      resolve({
        child,
        base: m[1],
        output: () => out,
        kill: async () => {
          child.kill('SIGKILL');
          await exited(child);
        },
        stop: async () => {
          // A server that does not drain within 15 s is killed: a hung one must not hold CI.
          const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
          child.kill('SIGTERM');
          await exited(child);
          clearTimeout(kill);
        },
      });
    });
  });
}

/** Spawns `node src/server.ts`. `cwd`: a checkout of another commit (test/reliability/rolling-upgrade.test.ts), else this one. */
export function startServer(env: Record<string, string>, timeoutMs = 60_000, cwd?: string): Promise<Server> {
  // A deprecation is an error here as in the test processes (package.json): it fails the test that caused it.
  return spawnServer(['--throw-deprecation', ...typescriptIn(cwd), 'src/server.ts'], { cwd, env, timeoutMs });
}

/**
 * Builds the bundle with package.json's build command into a directory of its own under the
 * checkout (its imports resolve from node_modules there; git ignores `.bundle-*`), so that a test
 * building dist/ at the same time does not race this one. Returns the directory and its removal.
 */
export async function buildBundle(name: string): Promise<{ outdir: string; remove(): void }> {
  const root = join(import.meta.dirname, '..', '..');
  const { build } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
  assert.match(build, /--outdir=dist\b/);
  const outdir = `.bundle-${name}-${randomBytes(4).toString('hex')}`;
  await run('sh', ['-c', build.replaceAll('--outdir=dist', `--outdir=${outdir}`)], {
    cwd: root,
    env: { ...baseEnv, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` },
  });
  return { outdir, remove: () => rmSync(join(root, outdir), { recursive: true, force: true }) };
}

/** Starts a bundle built into `outdir` as `npm start` starts dist/ (its flags, preload and settings, from package.json). */
export function startBundle(outdir: string, env: Record<string, string>): Promise<Server> {
  const start = startCommand(outdir);
  return spawnServer(['--throw-deprecation', ...start.args], { env: { ...start.env, ...env } });
}

export interface Tenant {
  businessId: string;
  apiKey: string;
  headers: Record<string, string>;
}

/** `src/cli.ts business create --json` against DATABASE_URL, as an operator would. */
export async function cliCreateBusiness(
  databaseUrl: string,
  name = 'Reliability Supplier',
  cwd?: string,
  env: Record<string, string> = {},
): Promise<Tenant> {
  const { stdout } = await run(
    process.execPath,
    [...typescriptIn(cwd), 'src/cli.ts', 'business', 'create', '--name', name, '--json'],
    {
      cwd,
      env: { ...baseEnv, DATABASE_URL: databaseUrl, ...env },
    },
  );
  const { businessId, apiKey } = JSON.parse(stdout.trim().split('\n').pop()!);
  return { businessId, apiKey, headers: { 'x-business-id': businessId, 'x-api-key': apiKey } };
}

/** A fresh PostgreSQL database (not a schema: servers are spawned with a plain DATABASE_URL). */
export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `supplyline_rel_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/** One HTTP call; network errors come back as status 0 so that load loops can count them. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { as?: Tenant; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.as?.headers, ...options.headers };
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  try {
    const res = await fetch(base + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      /* keep text */
    }
    return { status: res.status, body, headers: res.headers };
  } catch (error) {
    return { status: 0, body: String(error), headers: new Headers() };
  }
}

export const DELIVERY = '2030-01-15T10:30:00.000Z';

/** An item with one variant, and a buyer: what an order needs. */
export async function createCatalogue(base: string, as: Tenant): Promise<{ variantId: string; buyerId: string }> {
  const item = await call(base, 'POST', '/api/v1/items', {
    as,
    body: {
      item: { name: `Widget ${randomBytes(4).toString('hex')}` },
      variants: [{ variantName: 'Default', currency: 'AUD', price: 12.5, cost: 4 }],
    },
  });
  assert.equal(item.status, 201, JSON.stringify(item.body));
  const buyer = await call(base, 'POST', '/api/v1/buyers', { as, body: { buyer: { name: 'Acme Foods' } } });
  assert.equal(buyer.status, 201, JSON.stringify(buyer.body));
  return { variantId: item.body.variantIds[0], buyerId: buyer.body.id };
}

export const orderBody = (variantId: string, extra: Record<string, unknown> = {}) => ({
  expectedDeliveryAt: DELIVERY,
  orderItems: [{ itemVariantId: variantId, quantity: 2 }],
  ...extra,
});

/** Runs `work` over `items` with at most `limit` at once. */
export async function pool<T, R>(
  items: T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i], i);
      }
    }),
  );
  return results;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Debian's PgBouncer (`apt-get install pgbouncer`; .ci/run installs it) in transaction mode in front
 * of PG_URL's server, on a free port, as operators run it: the URL of `database` through it.
 */
export async function startPgBouncer(
  database: string,
  settings: Record<string, string | number> = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const binary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));
  if (!binary) throw new Error('No pgbouncer: apt-get install -y pgbouncer');
  const target = new URL(database);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-pgbouncer-'));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'users.txt'), `"${decodeURIComponent(target.username) || 'postgres'}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 10',
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
      ...Object.entries(settings).map(([name, value]) => `${name} = ${value}`),
    ].join('\n'),
  );
  // PgBouncer will not run as root; -u drops to the postgres user.
  const child = spawn(binary, [...(process.getuid?.() === 0 ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const url = new URL(database);
  url.port = String(port);
  url.hostname = '127.0.0.1';
  const stop = async () => {
    child.kill('SIGTERM');
    await exited(child);
    rmSync(dir, { recursive: true, force: true });
  };
  for (let tries = 0; ; tries++) {
    const c = new pg.Client({ connectionString: url.toString() });
    try {
      await c.connect();
      await c.query('select 1');
      await c.end();
      return { url: url.toString(), stop };
    } catch (error) {
      await c.end().catch(() => {});
      if (tries > 50 || child.exitCode !== null) {
        await stop();
        throw new Error(`pgbouncer did not start: ${(error as Error).message}\n${out}`);
      }
      await sleep(100);
    }
  }
}

/**
 * The advisory locks granted in `database` (a URL; asked over PG_URL, not through a pooler), with
 * the state of the connection holding each: one granted to an `idle` connection was left behind.
 */
export async function advisoryLocks(database: string): Promise<Array<{ pid: number; state: string }>> {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      `select l.pid, a.state from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where l.locktype = 'advisory' and l.granted
          and l.database = (select oid from pg_database where datname = $1)`,
      [decodeURIComponent(new URL(database).pathname.slice(1))],
    );
    return rows;
  } finally {
    await admin.end();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
