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

/**
 * Vacuums a PostgreSQL database whose server runs without autovacuum (this machine's cluster has it
 * off), so that the dead rows of one round's updates do not slow the next: 500 orders updated
 * hundreds of times a second grow long chains of dead versions in seconds, and a run slowed round
 * by round (260 → 122 req/s over six A/B rounds, 2026-12-03). Answers whether it vacuumed.
 */
export async function vacuumWithoutAutovacuum(url: string): Promise<boolean> {
  if (!url.startsWith('postgres')) return false;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ autovacuum: string }>('show autovacuum');
    if (rows[0]?.autovacuum === 'on') return false;
    await client.query('vacuum (analyze)');
    return true;
  } finally {
    await client.end();
  }
}
