import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import pg from 'pg';
import { createApp } from '../../src/app.ts';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { loadConfig } from '../../src/config.ts';
import { backends } from '../helpers/context.ts';

/**
 * An upgrade from earlier releases (issue 44): databases their own servers wrote through their API
 * (scripts/upgrade-fixture.ts; a 64-bit ERP id in properties where the release took one) are
 * migrated by this release, which then answers every recorded read as the release did (fields
 * added since aside), takes a PATCH of every old record, and exports what the feed does not hold.
 */
const FIXTURES = 'test/fixtures/upgrade';
const run = promisify(execFile);

interface Answer {
  path: string;
  status: number;
  etag: string | null;
  body: unknown;
}
interface Recorded {
  businessId: string;
  apiKey: string;
  answers: Answer[];
}

/** The order guide's statuses list the orders they describe now; the release listed none (CHANGELOG.md). */
const CHANGED_ON_PURPOSE = /status=(PREPARING|SHIPPED)/;
/** Refused by a release between, and taken again (CHANGELOG.md): 400 then, 200 now. */
const TAKEN_AGAIN = /status=(PREPARING|SHIPPED|CANCELLED)|invoices\?includeDeleted/;

/** `now` as `then` had it: the fields `then` had, with `now`'s values; fields added since are left out. */
function asBefore(then: unknown, now: unknown): unknown {
  if (Array.isArray(then) && Array.isArray(now)) return now.map((v, i) => asBefore(then[i], v));
  if (then && now && typeof then === 'object' && typeof now === 'object') {
    // A request id is each request's own.
    return Object.fromEntries(
      Object.keys(then).map((k) => [
        k,
        k === 'requestId'
          ? (then as Record<string, unknown>)[k]
          : asBefore((then as Record<string, unknown>)[k], (now as Record<string, unknown>)[k]),
      ]),
    );
  }
  return now;
}

/** The fixture's database, restored to a place of its own, and how to drop it. */
async function restore(dir: string, backend: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (backend === 'sqlite') {
    const tmp = mkdtempSync(join(tmpdir(), 'upgrade-'));
    copyFileSync(join(dir, 'sqlite.db'), join(tmp, 'supplyline.db'));
    return {
      url: `sqlite:${join(tmp, 'supplyline.db')}`,
      drop: async () => rmSync(tmp, { recursive: true, force: true }),
    };
  }
  const base = process.env.TEST_DATABASE_URL!;
  const name = `upgrade_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  await run('pg_restore', ['--no-owner', `--dbname=${url}`, join(dir, 'postgres.dump')]);
  return {
    url: url.toString(),
    drop: async () => {
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
    },
  };
}

for (const release of readdirSync(FIXTURES).sort()) {
  for (const backend of backends) {
    describe(`[${backend}] an upgrade from the release of ${release}`, () => {
      it('keeps every read, keeps old records writable, and exports what the feed does not hold', async () => {
        const recorded: Recorded = JSON.parse(readFileSync(join(FIXTURES, release, 'recorded.json'), 'utf8'))[backend];
        const database = await restore(join(FIXTURES, release), backend);
        let handle: DatabaseHandle | undefined;
        try {
          handle = createDatabase(database.url);
          const applied = await migrateToLatest(handle.db, handle.dialect);
          assert.ok(applied.length > 0, "the release's database had migrations to run");
          const config = {
            ...loadConfig({ RATE_LIMIT_RPS: '0' }),
            webhooks: { ...loadConfig({}).webhooks, workers: false },
          };
          const app = await createApp({ db: handle.db, config, rateLimiter: null });
          try {
            const headers = { 'x-business-id': recorded.businessId, 'x-api-key': recorded.apiKey };
            const call = async (method: string, url: string, body?: unknown) => {
              const res = await app.inject({
                method: method as 'GET',
                url,
                headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
                payload: body ? JSON.stringify(body) : undefined,
              });
              return {
                status: res.statusCode,
                headers: res.headers,
                body: res.body === '' ? null : JSON.parse(res.body),
              };
            };

            // Every read answers as the release answered it.
            for (const answer of recorded.answers) {
              const now = await call('GET', answer.path);
              if (answer.status === 400 && TAKEN_AGAIN.test(answer.path)) {
                assert.equal(now.status, 200, answer.path);
                continue;
              }
              assert.equal(now.status, answer.status, `${answer.path}: ${JSON.stringify(now.body).slice(0, 300)}`);
              if (answer.etag) assert.equal(now.headers.etag, answer.etag, answer.path);
              if (!CHANGED_ON_PURPOSE.test(answer.path))
                assert.deepEqual(asBefore(answer.body, now.body), answer.body, answer.path);
            }

            // Every old record takes a PATCH of another namespace of its properties, whatever it holds.
            const live = (kind: string) =>
              recorded.answers.filter((a) => a.status === 200 && new RegExp(`^/api/v1/${kind}/[a-z]+_`).test(a.path));
            const patches: Array<[string, unknown]> = [
              ...live('orders').map(
                (a) => [a.path, { order: { properties: { upgraded: { ok: true } } } }] as [string, unknown],
              ),
              ...live('items').map((a) => [a.path, { properties: { upgraded: { ok: true } } }] as [string, unknown]),
              ...live('buyers').map(
                (a) => [a.path, { buyer: { properties: { upgraded: { ok: true } } } }] as [string, unknown],
              ),
              ...live('invoices').map((a) => [a.path, { properties: { upgraded: { ok: true } } }] as [string, unknown]),
            ];
            assert.ok(patches.length >= 10);
            const before = (await call('GET', '/api/v1/events?after=0&limit=1000')).body.lastSequence;
            for (const [path, body] of patches) {
              const res = await call('PATCH', path, body);
              assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
              assert.deepEqual(res.body.properties.upgraded, { ok: true });
            }
            // Each PATCH appended its event; what was there before the upgrade is in the export, not the feed.
            const feed = (await call('GET', `/api/v1/events?after=${before}&limit=1000`)).body;
            assert.equal(feed.items.length, patches.length);
            const exported = await app.inject({ method: 'GET', url: '/api/v1/orders/export', headers });
            const lines = exported.body
              .trimEnd()
              .split('\n')
              .map((l) => JSON.parse(l));
            const listed = (await call('GET', '/api/v1/orders?limit=100')).body;
            assert.equal(
              lines.length,
              listed.total,
              'the export holds every order, those from before the feed began too',
            );
            assert.equal(Number(exported.headers['supplyline-event-sequence']), feed.lastSequence);
          } finally {
            await app.close();
          }
        } finally {
          await handle?.close();
          await database.drop();
        }
      });
    });
  }
}
