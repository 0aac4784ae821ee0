/**
 * Runs tests with reads routed to a streaming replica: starts a primary and a replica of its own
 * (test/helpers/replica-cluster.ts), points TEST_DATABASE_URL at the primary and
 * TEST_DATABASE_REPLICA_URL at the replica, and runs `npm test` (the whole suite), or the test files
 * given (`npm run test:replica -- test/items/items.test.ts`), then stops both.
 */
import { spawn } from 'node:child_process';
import { startReplicatedCluster } from '../test/helpers/replica-cluster.ts';

const args = process.argv.slice(2);
const cluster = await startReplicatedCluster();
console.log(`# primary ${cluster.primaryUrl()}, replica ${cluster.replicaUrl()}`);
const command = args.length > 0 ? ['run', '-s', 'test:files', '--', ...args] : ['test'];
const code = await new Promise<number>((resolve) => {
  const child = spawn('npm', command, {
    stdio: 'inherit',
    env: {
      ...process.env,
      TEST_DATABASE_URL: cluster.primaryUrl(),
      TEST_DATABASE_REPLICA_URL: cluster.replicaUrl(),
    },
  });
  child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  // Interrupted: the child hears the signal too; the clusters are stopped when it exits.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
});
await cluster.stop();
process.exit(code);
