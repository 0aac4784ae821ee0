/**
 * The CLI as an operator runs it, for tests: the bundle `npm run build` makes (it starts in a
 * fraction of the time its sources take), in a process of its own, against a throwaway database.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildBundle } from '../reliability/helpers.ts';
import type { BackendName } from './context.ts';

export const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type RunCli = ((
  args: string[],
  databaseUrl: string,
  options?: { bin?: { cwd: string }; env?: Record<string, string> },
) => Promise<CliResult>) & {
  /** node's arguments that run the bundled CLI, for a test that spawns it itself */ argv(): string[];
};

/**
 * Builds the bundle before the file's tests and removes it after them, and answers a runner:
 * `runCli(args, DATABASE_URL)`; with `bin`, through bin/supplyline.js (the sources) from that cwd.
 */
export function bundledCli(name: string): RunCli {
  let bundle: { outdir: string; remove(): void };
  before(async () => {
    bundle = await buildBundle(name);
  });
  after(() => bundle.remove());
  const argv = () => ['--enable-source-maps', join(root, bundle.outdir, 'cli.js')];
  const run: RunCli = (args, databaseUrl, options = {}) => {
    const [file, ...prefix] = options.bin ? [join(root, 'bin', 'supplyline.js')] : [process.execPath, ...argv()];
    return new Promise((resolve) => {
      execFile(
        file,
        [...prefix, ...args],
        { cwd: options.bin?.cwd ?? root, env: { ...process.env, ...options.env, DATABASE_URL: databaseUrl } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });
  };
  run.argv = argv;
  return run;
}

/**
 * A throwaway database URL. On PostgreSQL this is a whole database rather than a schema,
 * because the CLI only takes DATABASE_URL and has no way to be told a schema.
 */
export async function createDatabaseUrl(backend: BackendName): Promise<{ url: string; drop(): Promise<void> }> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-cli-'));
    return { url: `sqlite:${join(dir, 'cli.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = `cli_${randomBytes(6).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const withAdmin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await withAdmin(`create database ${name}`);
  return { url: url.toString(), drop: () => withAdmin(`drop database if exists ${name} with (force)`) };
}
