import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  advisoryLocks,
  baseEnv,
  buildBundle,
  createPgDatabase,
  missing,
  startBundle,
  startPgBouncer,
  startServers,
} from './helpers.ts';

/**
 * Before the fix a round left the lock behind 4 to 8 times in 10 (decision 0052): eight rounds
 * miss that with a chance of 2 % at the lower rate. Each round costs about 8 s of CI's 15 minutes.
 */
const ROUNDS = 8;
const run = promisify(execFile);

/**
 * Instances started at the same moment through PgBouncer in transaction mode all migrate at once:
 * where a migration's lock outlives the statement that took it, the pooler can leave it on an
 * idle server connection, and every later start waits for it. Each round has a new database, so
 * each round migrates from nothing. The servers and the CLI run from the bundle, as `npm start`
 * runs it (it starts in less time than the sources), without their workers, which play no part.
 */
describe('Three instances started at once through PgBouncer, round after round', () => {
  const skip = missing('postgres');
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
  let bundle: Awaited<ReturnType<typeof buildBundle>> | undefined;
  let first: Awaited<ReturnType<typeof createPgDatabase>> | undefined;

  before(async () => {
    if (skip) return;
    bundle = await buildBundle('pooler-rounds');
    first = await createPgDatabase();
    bouncer = await startPgBouncer(first.url);
  });
  after(async () => {
    await bouncer?.stop();
    await first?.drop();
    bundle?.remove();
  });

  it(`leave no advisory lock on an idle connection, and the CLI runs after them, ${ROUNDS} times`, {
    skip: skip ?? false,
  }, async () => {
    const idle = (locks: Awaited<ReturnType<typeof advisoryLocks>>) => locks.filter((l) => l.state === 'idle');
    for (let round = 1; round <= ROUNDS; round++) {
      const database = round === 1 ? first! : await createPgDatabase();
      const pooled = new URL(bouncer!.url);
      pooled.pathname = new URL(database.url).pathname;
      const env = {
        DATABASE_URL: pooled.toString(),
        DATABASE_DIRECT_URL: database.url,
        PG_PREPARED_STATEMENTS: 'off',
        WEBHOOK_WORKERS: 'off',
        IMPORT_CONCURRENCY: '0',
      };
      try {
        const servers = await startServers(3, env, (e) => startBundle(bundle!.outdir, e));
        await Promise.all(servers.map((s) => s.stop()));
        assert.deepEqual(idle(await advisoryLocks(database.url)), [], `round ${round}: a lock left after the starts`);
        const cli = [join(bundle!.outdir, 'cli.js'), 'business', 'create', '--name', `Round ${round}`, '--json'];
        const { stdout } = await run(process.execPath, cli, { env: { ...baseEnv, ...env } });
        assert.match(JSON.parse(stdout.trim().split('\n').pop()!).businessId, /^bus_/);
        assert.deepEqual(idle(await advisoryLocks(database.url)), [], `round ${round}: a lock left after the CLI`);
      } finally {
        if (round > 1) await database.drop();
      }
    }
  });
});
