import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe } from 'node:test';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createApp, type App } from '../../src/app.ts';
import type { EventBus } from '../../src/events/bus.ts';
import { createApiKey, openBusiness, revokeApiKey } from '../../src/businesses/service.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { createSandbox } from '../../src/sandbox/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Scope } from '../../src/businesses/scopes.ts';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/types.ts';
import type { RateLimiter } from '../../src/http/rate-limit.ts';
import { createResponseChecker } from './openapi-check.ts';
import { testListTuning } from './orders.ts';

export type BackendName = 'sqlite' | 'postgres';

/**
 * SQLite always; PostgreSQL too when TEST_DATABASE_URL is set, with its reads routed to a replica
 * when TEST_DATABASE_REPLICA_URL is set too (npm run test:replica, which CI runs).
 */
export const backends: BackendName[] = ['sqlite', ...(process.env.TEST_DATABASE_URL ? ['postgres' as const] : [])];

/**
 * TEST_DATABASE_REPLICA_URL: a streaming replica of TEST_DATABASE_URL's cluster (scripts/test-with-replica.ts
 * makes one). The PostgreSQL apps then route their reads to it, as DATABASE_REPLICA_URLS does; the
 * database name is TEST_DATABASE_URL's, which each test process makes for itself.
 */
export function testReplicaUrls(primaryUrl: string): string[] | undefined {
  const replica = process.env.TEST_DATABASE_REPLICA_URL;
  if (!replica) return undefined;
  const url = new URL(replica);
  url.pathname = new URL(primaryUrl).pathname;
  return [url.toString()];
}

export interface Tenant {
  businessId: string;
  apiKey: string;
  keyId: string;
  headers: Record<string, string>;
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | number | undefined>;
}

export interface RequestOptions {
  as?: Tenant | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestDatabase {
  handle: DatabaseHandle;
  /** The same database again, as another instance would open it. */
  url: string;
  schema?: string;
  drop(): Promise<void>;
}

/** A throwaway database: a fresh SQLite file, or a fresh PostgreSQL schema. Migrated. */
export async function createTestDatabase(backend: BackendName): Promise<TestDatabase> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-test-'));
    const url = `sqlite:${join(dir, 'test.db')}`;
    const handle = createDatabase(url);
    await migrateToLatest(handle.db, handle.dialect);
    return { handle, url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const url = process.env.TEST_DATABASE_URL!;
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const handle = createDatabase(url, { schema, replicaUrls: testReplicaUrls(url) });
  await migrateToLatest(handle.db, handle.dialect);
  return {
    handle,
    url,
    schema,
    drop: async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    },
  };
}

export class TestContext {
  readonly backend: BackendName;
  readonly database: TestDatabase;
  readonly app: App;
  readonly config: Config;

  constructor(backend: BackendName, database: TestDatabase, app: App, config: Config) {
    this.backend = backend;
    this.database = database;
    this.app = app;
    this.config = config;
  }

  get db(): Kysely<Database> {
    return this.database.handle.db;
  }

  /** A fresh business with its own key, as every test should use. */
  async createTenant(name = 'Test Supplier'): Promise<Tenant> {
    const created = await openBusiness(createWriteRunner(this.db), name);
    return tenant(created.businessId, created.apiKey, created.keyId);
  }

  /** A sandbox of the tenant's business (src/sandbox) with its test key, as `sandbox create` makes it. */
  async createSandbox(owner: Tenant, name?: string): Promise<Tenant> {
    const created = await createSandbox(this.db, owner.businessId, name, {
      writes: createWriteRunner(this.db),
      actor: SYSTEM,
      box: new SecretBox(this.config.secretKeys ?? [randomBytes(32)]),
      maxSandboxes: this.config.sandboxesPerBusiness,
    });
    return tenant(created.sandbox.id, created.apiKey, created.keyId);
  }

  /** Another key of the tenant's business; with `scopes`, one that may do only that. */
  async addKey(owner: Tenant, scopes?: Scope[]): Promise<Tenant> {
    const key = await createWriteRunner(this.db).run({ businessId: owner.businessId, actor: SYSTEM }, (ctx) =>
      createApiKey(ctx, { scopes }),
    );
    return tenant(owner.businessId, key.apiKey, key.keyId);
  }

  /** Revokes one of the tenant's keys, as `cli key revoke` does. */
  async revokeKey(owner: Tenant, keyId = owner.keyId): Promise<void> {
    await createWriteRunner(this.db).run({ businessId: owner.businessId, actor: SYSTEM }, (ctx) =>
      revokeApiKey(ctx, keyId),
    );
  }

  async request<T = any>(method: string, url: string, options: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...(options.as ? options.as.headers : {}), ...options.headers };
    const hasBody = options.body !== undefined;
    if (hasBody && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
    const response = await this.app.inject({
      method: method as 'GET',
      url,
      headers,
      payload: hasBody
        ? typeof options.body === 'string' || Buffer.isBuffer(options.body)
          ? options.body
          : JSON.stringify(options.body)
        : undefined,
    });
    const text = response.body;
    let body: any = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.statusCode, body, headers: response.headers };
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.database.handle.close();
    await this.database.drop();
  }
}

function tenant(businessId: string, apiKey: string, keyId: string): Tenant {
  return { businessId, apiKey, keyId, headers: { 'x-business-id': businessId, 'x-api-key': apiKey } };
}

export interface ContextOptions {
  config?: Partial<Config>;
  /** Made afresh for each context, and closed with it. */
  rateLimiter?: () => RateLimiter;
  clock?: () => number;
  /** The app's event bus (long polls), made afresh for each context. */
  events?: () => EventBus;
}

export async function createTestContext(backend: BackendName, options: ContextOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase(backend);
  const config = Object.freeze({ ...loadConfig({ RATE_LIMIT_RPS: '0' }), ...options.config });
  const rateLimiter = options.rateLimiter?.() ?? null;
  const app = await createApp({
    db: database.handle.db,
    config,
    rateLimiter,
    clock: options.clock,
    events: options.events?.(),
    orderListTuning: testListTuning,
    replicas: database.handle.replicas,
  });
  app.addHook('onClose', async () => rateLimiter?.close());
  await app.ready();
  checkResponsesOf(app);
  return new TestContext(backend, database, app, config);
}

/** A checker per document: the apps of a test process share theirs, and its compiled schemas. */
const checkers = new Map<string, ReturnType<typeof createResponseChecker>>();

/**
 * Every response of `app.inject` (so every `ctx.request`) is checked against the app's own
 * /openapi.json: the status is declared, the body matches, the required headers are there.
 * A mismatch fails the test that made the request, so a new route is covered by its own tests.
 */
export function checkResponsesOf(app: App): void {
  const document = app.swagger();
  const text = JSON.stringify(document);
  let check = checkers.get(text);
  if (!check) checkers.set(text, (check = createResponseChecker(document)));
  const inject = app.inject.bind(app) as (options: any) => Promise<any>;
  (app as { inject: unknown }).inject = async (options: any) => {
    const response = await inject(options);
    const { method = 'GET', url = '/' } = typeof options === 'string' ? { url: options } : options;
    // As light-my-request sends it: a URL resolves its dot segments (`/items/.` is `/items/`), so the route that answers is that one's.
    const given = typeof url === 'string' ? url : String(url.pathname ?? '/');
    const resolved = new URL(given, 'http://localhost');
    const target = resolved.pathname + resolved.search;
    const payload = typeof options === 'object' ? options.payload : undefined;
    const problems = check({
      method,
      url: target,
      requestHeaders: options.headers,
      requestBody: typeof payload === 'string' ? payload : undefined,
      status: response.statusCode,
      headers: response.headers,
      body: response.body,
    });
    if (problems.length > 0)
      throw new assert.AssertionError({ message: `Response differs from /openapi.json:\n${problems.join('\n')}` });
    return response;
  };
}

/**
 * Declares a suite once per backend, with a fresh database for the suite:
 * `describeEachBackend('POST /api/v1/items', (ctx) => { it(...) })`.
 */
export function describeEachBackend(
  title: string,
  body: (ctx: () => TestContext) => void,
  options: ContextOptions = {},
): void {
  for (const backend of backends) {
    describe(`[${backend}] ${title}`, () => {
      let context: TestContext | undefined;
      before(async () => {
        context = await createTestContext(backend, options);
      });
      after(async () => {
        await context?.close();
      });
      body(() => context!);
    });
  }
}
