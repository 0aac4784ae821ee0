import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';

/** Databases of a given schema version, for the migration tests (test/migrate*.test.ts). */

export const NOW = '2025-01-01T00:00:00.000Z';

/** Business `bus_<b>`, a buyer `phm_<b>` and their partnership `prt_<b>`: what an order row of any schema needs. */
export async function seedBusiness(db: Kysely<any>, b = '1') {
  await db
    .insertInto('businesses')
    .values({ id: `bus_${b}`, name: b, created_at: NOW, updated_at: NOW })
    .execute();
  await db
    .insertInto('phantoms')
    .values({ id: `phm_${b}`, business_id: `bus_${b}`, name: b, status: 'ACTIVE', created_at: NOW, updated_at: NOW })
    .execute();
  await db
    .insertInto('partnerships')
    .values({
      id: `prt_${b}`,
      business_id: `bus_${b}`,
      phantom_id: `phm_${b}`,
      status: 'ACTIVE',
      created_at: NOW,
      updated_at: NOW,
    })
    .execute();
}

/** An order row of business `bus_1` (ACTIVE, ACCEPTED, made at NOW), with `fields` over it. */
export const orderRow = (id: string, fields: Record<string, unknown> = {}) => ({
  id,
  business_id: 'bus_1',
  partnership_id: 'prt_1',
  phase: 'ACTIVE',
  status: 'ACCEPTED',
  internal_reference: id,
  expected_delivery_at: NOW,
  currency: 'AUD',
  total_amount: '0',
  version: 1,
  created_at: NOW,
  updated_at: NOW,
  ...fields,
});

/** An empty database of its own on `backend` (a temporary SQLite file, or a PostgreSQL schema), dropped afterwards. */
export async function withEmptyDatabase(backend: string, run: (open: () => DatabaseHandle) => Promise<void>) {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-migrate-'));
    try {
      await run(() => createDatabase(`sqlite:${join(dir, 'db.sqlite')}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const url = process.env.TEST_DATABASE_URL!;
  const schema = `m_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  try {
    await run(() => createDatabase(url, { schema }));
  } finally {
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}
