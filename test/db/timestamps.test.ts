import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { timestamptzAsIso } from '../../src/db/pg-types.ts';
import { describeEachBackend } from '../helpers/context.ts';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

it('a timestamptz in text is ISO 8601 with milliseconds, in any zone', () => {
  assert.equal(timestamptzAsIso('2026-12-03 10:24:15.959+00'), '2026-12-03T10:24:15.959Z');
  assert.equal(timestamptzAsIso('2026-12-03 10:24:15.9+00'), '2026-12-03T10:24:15.900Z');
  assert.equal(timestamptzAsIso('2026-12-03 10:24:15.959876+00'), '2026-12-03T10:24:15.959Z');
  assert.equal(timestamptzAsIso('2026-12-03 10:24:15+00'), '2026-12-03T10:24:15.000Z');
  assert.equal(timestamptzAsIso('2026-12-03 11:24:15.959+01'), '2026-12-03T10:24:15.959Z');
  assert.equal(timestamptzAsIso('2026-12-03 05:54:15.959-04:30'), '2026-12-03T10:24:15.959Z');
  assert.equal(timestamptzAsIso('0001-01-01 00:00:00+00'), '0001-01-01T00:00:00.000Z');
});

/** Timestamps read back the same on both backends: the ISO text SQLite stores (src/db/pg-types.ts). */
describeEachBackend('timestamps read from the database', (ctx) => {
  it('are the ISO text stored, whatever the session time zone', async () => {
    const { db, backend } = ctx();
    const stored = '2026-12-03T10:24:15.959Z';
    const postgres = backend === 'postgres';
    await db.transaction().execute(async (trx) => {
      if (postgres) await sql`set local time zone 'Asia/Kathmandu'`.execute(trx);
      const { rows } = await sql<{ at: unknown; now: unknown }>`select ${
        postgres ? sql`${stored}::timestamptz` : sql`${stored}`
      } as at, ${postgres ? sql`now()` : sql`${stored}`} as now`.execute(trx);
      assert.equal(rows[0].at, stored);
      assert.match(String(rows[0].now), ISO_MS);
    });
    if (postgres) {
      const { rows } = await sql<{ at: unknown }>`select ${stored}::timestamptz as at`.execute(db);
      assert.equal(rows[0].at, stored);
    }
  });
});
