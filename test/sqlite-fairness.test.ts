import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase } from '../src/db/connection.ts';

describe('SQLite connection queue', () => {
  it('serves concurrent transactions first come, first served', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supplyline-fifo-'));
    const handle = createDatabase(`sqlite:${join(dir, 'db.sqlite')}`);
    try {
      const finished: number[] = [];
      await Promise.all(Array.from({ length: 60 }, (_, i) => handle.db.transaction().execute(async (trx) => {
        await sql`select ${i}`.execute(trx);
        await new Promise((r) => setImmediate(r));
        await sql`select ${i}`.execute(trx);
        finished.push(i);
      })));
      assert.deepEqual(finished, Array.from({ length: 60 }, (_, i) => i));
    } finally {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
