/**
 * A PostgreSQL primary and a streaming replica of it, each a cluster of its own in a temporary
 * directory on a free port, run with Debian's server binaries as the postgres user. The system
 * cluster is not touched. Used by the replicas reliability test and by scripts/test-with-replica.ts.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const exec = promisify(execFile);

export interface ReplicatedCluster {
  /** postgres://postgres@127.0.0.1:PORT/DATABASE on the primary. */
  primaryUrl(database?: string): string;
  replicaUrl(database?: string): string;
  /** Runs one statement on the replica (`select pg_wal_replay_pause()`). */
  onReplica(statement: string): Promise<unknown[]>;
  onPrimary(statement: string): Promise<unknown[]>;
  /** Stops the replica (fast shutdown), as when its machine goes away; `startReplica` brings it back. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `pg_config --bindir`, else Debian's PostgreSQL 15 (pg_config comes with postgresql-common or libpq-dev). */
async function bindir(): Promise<string> {
  const { stdout } = await exec('pg_config', ['--bindir']).catch(() => ({ stdout: '/usr/lib/postgresql/15/bin' }));
  return stdout.trim();
}

/** Runs a server binary as the postgres user (initdb and the server refuse root). */
async function asPostgres(bin: string, args: string[]): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const { stdout } = asRoot
    ? await exec('runuser', ['-u', 'postgres', '--', bin, ...args], { cwd: '/tmp' })
    : await exec(bin, args, { cwd: '/tmp' });
  return stdout;
}

const SETTINGS = [
  'listen_addresses=127.0.0.1',
  'wal_level=replica',
  'max_wal_senders=5',
  'hot_standby=on',
  'hot_standby_feedback=on',
  'shared_buffers=32MB',
  'max_connections=200',
  // A throwaway cluster: its data need not survive a crash of the machine.
  'fsync=off',
  'full_page_writes=off',
];

/** `database` is made on the primary (and so on the replica). */
export async function startReplicatedCluster(database = 'supplyline'): Promise<ReplicatedCluster> {
  const bin = await bindir();
  const dir = mkdtempSync(join(tmpdir(), 'supplyline-replicas-'));
  chmodSync(dir, 0o755);
  if (process.getuid?.() === 0) {
    const { stdout } = await exec('id', ['-u', 'postgres']);
    const { stdout: gid } = await exec('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const primaryDir = join(dir, 'primary');
  const replicaDir = join(dir, 'replica');
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const options = (port: number) => [`-p ${port}`, `-k ${dir}`, ...SETTINGS.map((s) => `-c ${s}`)].join(' ');
  const started: string[] = [];
  const stop = async () => {
    for (const data of started.reverse())
      await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await asPostgres(join(bin, 'initdb'), ['-D', primaryDir, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    writeFileSync(
      join(primaryDir, 'pg_hba.conf'),
      'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n',
    );
    await asPostgres(join(bin, 'pg_ctl'), [
      '-D',
      primaryDir,
      '-o',
      options(primaryPort),
      '-l',
      join(dir, 'primary.log'),
      '-w',
      'start',
    ]);
    started.push(primaryDir);
    const url = (port: number, db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
    const run = async (port: number, statement: string, db = 'postgres') => {
      const client = new pg.Client({ connectionString: url(port, db) });
      await client.connect();
      try {
        return (await client.query(statement)).rows;
      } finally {
        await client.end();
      }
    };
    await run(primaryPort, `create database ${database}`);
    await asPostgres(join(bin, 'pg_basebackup'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      replicaDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    const startReplica = () =>
      asPostgres(join(bin, 'pg_ctl'), [
        '-D',
        replicaDir,
        '-o',
        options(replicaPort),
        '-l',
        join(dir, 'replica.log'),
        '-w',
        'start',
      ]);
    await startReplica();
    started.push(replicaDir);
    return {
      primaryUrl: (db = database) => url(primaryPort, db),
      replicaUrl: (db = database) => url(replicaPort, db),
      onReplica: (statement) => run(replicaPort, statement),
      onPrimary: (statement) => run(primaryPort, statement),
      stopReplica: async () => {
        await asPostgres(join(bin, 'pg_ctl'), ['-D', replicaDir, '-m', 'fast', '-w', 'stop']);
      },
      startReplica: async () => {
        await startReplica();
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
