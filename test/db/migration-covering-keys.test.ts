import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { COVERED_COUNT_TABLES, countsCoveringKeys } from '../../src/db/migrations/0027-counts-covering-keys.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { backends } from '../helpers/context.ts';
import { NOW, orderRow, seedBusiness, withEmptyDatabase } from '../helpers/migrations.ts';

/** Each count table's rows, comparable across backends. */
async function snapshot(db: Kysely<any>) {
  return Object.fromEntries(
    await Promise.all(
      COVERED_COUNT_TABLES.map(async (table) => {
        const rows = await db.selectFrom(table).selectAll().execute();
        return [
          table,
          rows.map((r) => JSON.stringify(Object.entries(r).map(([k, v]) => [k, k === 'n' ? Number(v) : v]))).sort(),
        ];
      }),
    ),
  );
}

/** PostgreSQL's primary key of each table, as `pg_get_constraintdef` writes it. */
async function keys(db: Kysely<any>) {
  const { rows } = await sql<{
    table: string;
    definition: string;
  }>`select conrelid::regclass::text as "table", pg_get_constraintdef(oid) as definition
    from pg_constraint where contype = 'p' and conrelid::regclass::text in (${sql.join([...COVERED_COUNT_TABLES])})`.execute(
    db,
  );
  return Object.fromEntries(rows.map((r) => [r.table, r.definition]));
}

for (const backend of backends) {
  describe(`[${backend}] migration 0027-counts-covering-keys`, () => {
    it('keeps every count row; on PostgreSQL each key includes n, the upserts still find it, and running it again changes nothing', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0026-commit-values');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          await db
            .insertInto('orders')
            .values([
              orderRow('ord_1', { properties: JSON.stringify({ erp: { no: 1 } }) }),
              orderRow('ord_2', {
                created_at: '2024-12-30T10:00:00.000Z',
                updated_at: '2025-01-01T00:00:00.000Z',
                phase: 'COMPLETED',
                status: 'DELIVERED',
              }),
              orderRow('ord_3', {
                properties: JSON.stringify({ erp: {} }),
                deleted_at: NOW,
                updated_at: '2025-01-02T00:00:00.000Z',
              }),
            ])
            .execute();
          await rebuildOrderProjections(handle.db, 'bus_1');
          const before = await snapshot(db);
          for (const table of COVERED_COUNT_TABLES) assert.ok(before[table].length > 0, `${table} has rows to keep`);

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0027-counts-covering-keys'), [
            '0027-counts-covering-keys',
          ]);
          assert.deepEqual(await snapshot(db), before);
          if (backend === 'postgres') {
            const made = await keys(db);
            assert.deepEqual(Object.keys(made).sort(), [...COVERED_COUNT_TABLES].sort());
            for (const table of COVERED_COUNT_TABLES)
              assert.match(made[table], /^PRIMARY KEY \(business_id, [\w, ]+, shard\) INCLUDE \(n\)$/, table);
            // A second run (a crash after its work, before the migrator recorded it) finds nothing to do.
            await countsCoveringKeys('postgres').up(db);
            assert.deepEqual(await keys(db), made);
          }
          // The counts are kept up as before: a rebuild writes the same rows through the upserts, whose
          // ON CONFLICT names the key's columns.
          await rebuildOrderProjections(handle.db, 'bus_1');
          assert.deepEqual(await snapshot(db), before);
        } finally {
          await handle.close();
        }
      });
    });
  });
}
