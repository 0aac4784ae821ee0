import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { longPropertyValues } from '../../src/db/migrations/0028-long-property-values.ts';
import { fittedValue } from '../../src/orders/read-model/property-values.ts';
import { backends } from '../helpers/context.ts';
import { NOW, orderRow, seedBusiness, withEmptyDatabase } from '../helpers/migrations.ts';

const read = async (db: Kysely<any>, table: string) =>
  (await db.selectFrom(table).select(['order_id', 'path', 'value']).orderBy('order_id').orderBy('path').execute()).map(
    (r) => `${r.order_id} ${r.path} ${r.value}`,
  );

for (const backend of backends) {
  describe(`[${backend}] migration 0028-long-property-values`, () => {
    it('stores side-table values past 1,000 bytes as their hash, as writes and filters now do, and leaves the rest', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0027-counts-covering-keys');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          await db
            .insertInto('orders')
            .values([orderRow('ord_1'), orderRow('ord_2'), orderRow('ord_3', { deleted_at: NOW })])
            .execute();
          // 2,002 bytes: written as it was before (PostgreSQL takes it, under its entry limit).
          const wide = `s:${'é'.repeat(1000)}`;
          const short = `s:${'x'.repeat(300)}`;
          const row = (order_id: string, path: string, value: string | null) => ({
            business_id: 'bus_1',
            order_id,
            path,
            value,
          });
          await db
            .insertInto('order_properties')
            .values([
              row('ord_1', 'a', wide),
              row('ord_1', 'b', short),
              row('ord_2', 'a', wide),
              row('ord_2', 'c', null),
            ])
            .execute();
          await db
            .insertInto('order_deleted_properties')
            .values([row('ord_3', 'a', wide)])
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0028-long-property-values'), [
            '0028-long-property-values',
          ]);
          const hashed = fittedValue(wide);
          assert.match(hashed, /^h:[0-9a-f]{64}$/);
          const live = await read(db, 'order_properties');
          assert.deepEqual(live, [`ord_1 a ${hashed}`, `ord_1 b ${short}`, `ord_2 a ${hashed}`, 'ord_2 c null']);
          assert.deepEqual(await read(db, 'order_deleted_properties'), [`ord_3 a ${hashed}`]);
          // A second run (a crash before the migrator recorded it) finds nothing to change.
          await longPropertyValues.up(db);
          assert.deepEqual(await read(db, 'order_properties'), live);
        } finally {
          await handle.close();
        }
      });
    });
  });
}
