import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { createDatabase, type DatabaseHandle } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { backends } from './helpers/context.ts';

async function withEmptyDatabase(backend: string, run: (open: () => DatabaseHandle) => Promise<void>) {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-migrate-'));
    try { await run(() => createDatabase(`sqlite:${join(dir, 'db.sqlite')}`)); } finally { rmSync(dir, { recursive: true, force: true }); }
    return;
  }
  const url = process.env.TEST_DATABASE_URL!;
  const schema = `m_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  try { await run(() => createDatabase(url, { schema })); } finally {
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}

for (const backend of backends) {
  describe(`[${backend}] migrations`, () => {
    it('are safe when three instances start at once on an empty database', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handles = [open(), open(), open()];
        try {
          const applied = await Promise.all(handles.map((h) => migrateToLatest(h.db, h.dialect)));
          const all = applied.flat();
          assert.equal(new Set(all).size, all.length, 'each migration ran exactly once');
          assert.ok(all.includes('0001-foundation'));
          assert.deepEqual(await migrateToLatest(handles[0].db, handles[0].dialect), [], 'nothing left to do');
        } finally {
          await Promise.all(handles.map((h) => h.close()));
        }
      });
    });
  });
}
