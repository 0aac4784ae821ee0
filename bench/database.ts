import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface BenchDatabase {
  url: string;
  describe: string;
  drop(): Promise<void>;
}

/** A fresh SQLite file in a temporary directory, or a fresh PostgreSQL database (dropped afterwards). */
export async function createBenchDatabase(backend: 'sqlite' | 'postgres'): Promise<BenchDatabase> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-bench-'));
    const url = `sqlite:${join(dir, 'bench.db')}`;
    return { url, describe: url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `supplyline_bench_${randomBytes(5).toString('hex')}`;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await run(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    describe: `postgres database ${name}`,
    drop: () => run(`drop database if exists ${name} with (force)`),
  };
}
