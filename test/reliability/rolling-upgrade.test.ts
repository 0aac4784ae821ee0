import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { STOP_FIRST } from '../../src/db/migrate.ts';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startServer,
  type Server,
} from './helpers.ts';

/**
 * A rolling upgrade (issue 44): three instances of the previous commit, under load, are replaced one
 * at a time by this one, as a load balancer drains each first. No request fails, and every
 * acknowledged write has its event. When this commit brings a migration the previous one cannot
 * run beside (STOP_FIRST), the procedure is "stop, then migrate", and this commit's first
 * instance must refuse to start while the previous ones run.
 */

/** A checkout of the previous commit beside this one, sharing node_modules when the lockfiles agree. */
function checkoutPrevious(): { dir: string; commit: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-previous-'));
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD~1'], { encoding: 'utf8' }).trim();
  } catch {
    // A clone without history: the rolling restart of this commit itself is what can be shown.
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  }
  execFileSync('git', ['worktree', 'add', '--detach', '--force', dir, commit], { stdio: 'ignore' });
  const sameLock = readFileSync('package-lock.json', 'utf8') === readFileSync(join(dir, 'package-lock.json'), 'utf8');
  // The servers here run on PostgreSQL, which never loads the SQLite driver: no build scripts needed.
  if (sameLock) symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
  else execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
  return {
    dir,
    commit,
    remove: () => execFileSync('git', ['worktree', 'remove', '--force', dir], { stdio: 'ignore' }),
  };
}

describe('rolling upgrade from the previous commit', { skip: missing('postgres') ?? false }, () => {
  it('replaces three instances one at a time under load: no request fails, every acknowledged write has its event', async () => {
    const previous = checkoutPrevious();
    const database = await createPgDatabase();
    const servers: Server[] = [];
    // The clients' loop runs while this is true; it ends with the test, whichever way the test ends.
    let loading = true;
    try {
      const tenant = await cliCreateBusiness(database.url, 'Rolling', previous.dir);
      const env = { DATABASE_URL: database.url, WEBHOOK_WORKERS: 'false' };
      for (let i = 0; i < 3; i++) servers.push(await startServer(env, 60_000, previous.dir));
      const catalogue = await createCatalogue(servers[0].base, tenant);
      const ours = readdirSync('src/db/migrations').map((f) => f.replace(/\.ts$/, ''));
      const theirs = existsSync(join(previous.dir, 'src/db/migrations'))
        ? readdirSync(join(previous.dir, 'src/db/migrations')).map((f) => f.replace(/\.ts$/, ''))
        : [];
      const stopFirst = ours.filter((name) => !theirs.includes(name) && STOP_FIRST.has(name));

      if (stopFirst.length > 0) {
        // Stop, then migrate: this commit's first instance refuses while the previous ones run.
        await assert.rejects(startServer(env), /cannot run while instances of an earlier release/);
        return;
      }

      // The load balancer's pool: requests go round the instances in it.
      const pool = servers.map((s) => s.base);
      let turn = 0;
      const failures: string[] = [];
      const created: string[] = [];
      const patched: Array<{ id: string; version: number }> = [];
      const client = async (n: number) => {
        for (let i = 0; loading; i++) {
          const base = pool[turn++ % pool.length];
          const patch = created.length > 0 && i % 2 === 1;
          const target = created[(n * 7 + i) % Math.max(1, created.length)];
          const res = await (patch
            ? call(base, 'PATCH', `/api/v1/orders/${target}`, { as: tenant, body: { order: { notes: `n${n}-${i}` } } })
            : call(base, 'POST', `/api/v1/buyers/${catalogue.buyerId}/orders`, {
                as: tenant,
                body: orderBody(catalogue.variantId),
              })
          ).catch((error: Error) => ({ status: 0, body: { error: error.message } }));
          if (res.status !== 200 && res.status !== 201) {
            // A new instance that cannot start leaves no instance to answer: the test ends on that, not on this loop.
            if (failures.length >= 100) break;
            failures.push(`${patch ? 'PATCH' : 'POST'} via ${base}: ${res.status} ${JSON.stringify(res.body)}`);
          } else if (patch) patched.push({ id: res.body.id, version: res.body.version });
          else created.push(res.body.id);
        }
      };
      const clients = [0, 1, 2, 3].map(client);
      await sleep(1_000);
      for (let i = 0; i < 3; i++) {
        // Drained first, as a load balancer does, then stopped; its replacement joins once it listens.
        const old = servers[i];
        pool.splice(pool.indexOf(old.base), 1);
        await old.stop();
        assert.equal(old.child.exitCode, 0, old.output());
        servers[i] = await startServer(env);
        pool.push(servers[i].base);
        await sleep(1_000);
      }
      loading = false;
      await Promise.all(clients);
      assert.deepEqual(failures, []);
      assert.ok(created.length > 20 && patched.length > 20, `${created.length} creates, ${patched.length} patches`);

      // Every acknowledged write has its event, whichever release made it.
      const events: Array<{ type: string; data: { object: { id: string; version: number } } }> = [];
      for (let after = 0; ; ) {
        const page = (
          await call(servers[0].base, 'GET', `/api/v1/events?after=${after}&limit=1000&types=order.*`, { as: tenant })
        ).body;
        events.push(...page.items);
        if (!page.hasMore) break;
        after = page.lastSequence;
      }
      const seen = new Set(events.map((e) => `${e.type} ${e.data.object.id} ${e.data.object.version}`));
      for (const id of created) assert.ok(seen.has(`order.created ${id} 1`), `created ${id} has its event`);
      for (const { id, version } of patched)
        assert.ok(seen.has(`order.updated ${id} ${version}`), `update ${id} v${version} has its event`);
    } finally {
      loading = false;
      await Promise.all(servers.map((s) => s.kill()));
      await database.drop();
      previous.remove();
    }
  });
});
