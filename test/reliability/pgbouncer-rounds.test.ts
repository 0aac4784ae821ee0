import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  advisoryLocks,
  cliCreateBusiness,
  createPgDatabase,
  missing,
  startPgBouncer,
  startServers,
} from './helpers.ts';

const ROUNDS = 20;

/**
 * Instances started at the same moment through PgBouncer in transaction mode all migrate at once:
 * where a migration's lock outlives the statement that took it, the pooler can leave it on an
 * idle server connection, and every later start waits for it. Each round has a new database, so
 * each round migrates from nothing; the servers run without their workers, which play no part.
 */
describe('Three instances started at once through PgBouncer, round after round', () => {
  const skip = missing('postgres');
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
  let first: Awaited<ReturnType<typeof createPgDatabase>> | undefined;

  before(async () => {
    if (skip) return;
    first = await createPgDatabase();
    bouncer = await startPgBouncer(first.url);
  });
  after(async () => {
    await bouncer?.stop();
    await first?.drop();
  });

  it(`leave no advisory lock on an idle connection, and the CLI runs after them, ${ROUNDS} times`, {
    skip: skip ?? false,
  }, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const database = round === 1 ? first! : await createPgDatabase();
      const pooled = new URL(bouncer!.url);
      pooled.pathname = new URL(database.url).pathname;
      const env = {
        PG_PREPARED_STATEMENTS: 'off',
        DATABASE_DIRECT_URL: database.url,
        WEBHOOK_WORKERS: 'off',
        IMPORT_CONCURRENCY: '0',
      };
      try {
        const servers = await startServers(3, { DATABASE_URL: pooled.toString(), ...env });
        await Promise.all(servers.map((s) => s.stop()));
        const idle = (locks: Awaited<ReturnType<typeof advisoryLocks>>) => locks.filter((l) => l.state === 'idle');
        assert.deepEqual(idle(await advisoryLocks(database.url)), [], `round ${round}: a lock left after the starts`);
        await cliCreateBusiness(pooled.toString(), `Round ${round}`, undefined, env);
        assert.deepEqual(idle(await advisoryLocks(database.url)), [], `round ${round}: a lock left after the CLI`);
      } finally {
        if (round > 1) await database.drop();
      }
    }
  });
});
