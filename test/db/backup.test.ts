import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { it } from 'node:test';
import pg from 'pg';
import { createApp } from '../../src/app.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { describeEachBackend, type TestContext, type Tenant } from '../helpers/context.ts';
import { createFixture, DELIVERY } from '../helpers/orders.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

const run = promisify(execFile);

/**
 * Backups round-trip (issue 44): `supplyline backup FILE` on SQLite while orders are being written,
 * pg_dump and pg_restore on PostgreSQL as docs/operations.md gives them. The copy opens with
 * today's release and is one consistent moment: every order acknowledged before the backup began
 * is in it, each as its latest event shows it, with its list total.
 */
async function readAll(db: ReturnType<typeof createDatabase>['db'], config: TestContext['config'], t: Tenant) {
  const app = await createApp({
    db,
    config: { ...config, webhooks: { ...config.webhooks, workers: false } },
    rateLimiter: null,
  });
  try {
    const get = async (url: string) => JSON.parse((await app.inject({ method: 'GET', url, headers: t.headers })).body);
    const list = await get('/api/v1/orders?limit=100');
    const feed = await get('/api/v1/events?after=0&limit=1000');
    const latest = new Map<string, unknown>();
    for (const event of feed.items)
      if (event.type.startsWith('order.')) latest.set(event.data.object.id, event.data.object);
    return { list, latest };
  } finally {
    await app.close();
  }
}

describeEachBackend('backups', (ctx) => {
  it('copies the database while it is written to, and the copy opens as one consistent moment', async () => {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const post = () =>
      ctx().request('POST', `/api/v1/buyers/${f.buyerId}/orders`, {
        as: t,
        body: { expectedDeliveryAt: DELIVERY, orderItems: [{ itemVariantId: f.variantIds[0], quantity: 1 }] },
      });
    const before: string[] = [];
    for (let i = 0; i < 15; i++) before.push((await post()).body.id);
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-backup-'));
    let writing = true;
    const writer = (async () => {
      while (writing) await post();
    })();
    const cleanups: Array<() => Promise<void>> = [];
    try {
      let restored: ReturnType<typeof createDatabase>;
      if (ctx().backend === 'sqlite') {
        const file = join(dir, 'backup.db');
        const { stdout, stderr } = await run(process.execPath, [...TYPESCRIPT, 'src/cli.ts', 'backup', file], {
          env: { ...process.env, DATABASE_URL: ctx().database.url },
        });
        assert.match(stdout, /Backed up sqlite:.* to .*backup\.db/);
        assert.match(stderr, /100%/);
        // A second backup to the same file is refused rather than overwriting it.
        await assert.rejects(
          run(process.execPath, [...TYPESCRIPT, 'src/cli.ts', 'backup', file], {
            env: { ...process.env, DATABASE_URL: ctx().database.url },
          }),
          /exists/,
        );
        restored = createDatabase(`sqlite:${file}`);
      } else {
        // As docs/operations.md gives them: pg_dump --format=custom, then pg_restore into a new database.
        const file = join(dir, 'backup.dump');
        const {
          database: { url, schema },
        } = ctx();
        await run('pg_dump', ['--format=custom', `--schema=${schema}`, `--file=${file}`, url]);
        const name = `restored_${randomBytes(6).toString('hex')}`;
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query(`create database ${name}`);
        const target = new URL(url);
        target.pathname = `/${name}`;
        cleanups.push(async () => {
          await admin.query(`drop database ${name} with (force)`);
          await admin.end();
        });
        await run('pg_restore', ['--no-owner', `--dbname=${target}`, file]);
        restored = createDatabase(target.toString(), { schema });
      }
      writing = false;
      await writer;
      try {
        const copy = await readAll(restored.db, ctx().config, t);
        for (const id of before) assert.ok(copy.latest.has(id), `${id}, acknowledged before the backup, is in it`);
        assert.equal(copy.list.total, copy.latest.size, 'the list total counts the orders the copy holds');
        for (const order of copy.list.items)
          assert.deepEqual(order, copy.latest.get(order.id), 'each order as its latest event shows it');
      } finally {
        await restored.close();
      }
    } finally {
      writing = false;
      await writer;
      for (const cleanup of cleanups) await cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a PostgreSQL database and a missing FILE, saying what to do', async () => {
    const env = (url: string) => ({ env: { ...process.env, DATABASE_URL: url } });
    await assert.rejects(
      run(process.execPath, [...TYPESCRIPT, 'src/cli.ts', 'backup', '/tmp/x.dump'], env('postgres://127.0.0.1:1/none')),
      /pg_dump --format=custom/,
    );
    await assert.rejects(
      run(process.execPath, [...TYPESCRIPT, 'src/cli.ts', 'backup'], env('sqlite:/tmp/none.db')),
      /needs one FILE/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-backup-'));
    try {
      writeFileSync(join(dir, 'taken'), 'x');
      await assert.rejects(
        run(
          process.execPath,
          [...TYPESCRIPT, 'src/cli.ts', 'backup', join(dir, 'copy.db')],
          env(`sqlite:${join(dir, 'missing.db')}`),
        ),
        /does not exist/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
