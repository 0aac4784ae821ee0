import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { countsWithoutRowid, WITHOUT_ROWID_TABLES } from '../../src/db/migrations/0025-counts-without-rowid.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { backends } from '../helpers/context.ts';
import { NOW, orderRow, seedBusiness, withEmptyDatabase } from '../helpers/migrations.ts';

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

for (const backend of backends) {
  describe(`[${backend}] migration 0007-count-shards`, () => {
    it('keeps the existing counts, as shard 0 of each', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0006-order-items-index');
          const db = handle.db as unknown as Kysely<any>;
          const now = new Date().toISOString();
          await db
            .insertInto('businesses')
            .values({ id: 'bus_1', name: 'B', created_at: now, updated_at: now })
            .execute();
          await db
            .insertInto('order_counts')
            .values([
              { business_id: 'bus_1', phase: 'PENDING', status: 'UNASSIGNED', n: 5 },
              { business_id: 'bus_1', phase: 'ACTIVE', status: 'ACCEPTED', n: 2 },
            ])
            .execute();
          await db.insertInto('order_property_counts').values({ business_id: 'bus_1', path: 'a.b', n: 3 }).execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0007-count-shards'), [
            '0007-count-shards',
          ]);
          const counts = await db
            .selectFrom('order_counts')
            .select(['phase', 'status', 'shard', 'n'])
            .orderBy('phase')
            .execute();
          assert.deepEqual(
            counts.map((c) => [c.phase, c.status, c.shard, Number(c.n)]),
            [
              ['ACTIVE', 'ACCEPTED', 0, 2],
              ['PENDING', 'UNASSIGNED', 0, 5],
            ],
          );
          const paths = await db.selectFrom('order_property_counts').select(['path', 'shard', 'n']).execute();
          assert.deepEqual(
            paths.map((c) => [c.path, c.shard, Number(c.n)]),
            [['a.b', 0, 3]],
          );
        } finally {
          await handle.close();
        }
      });
    });
  });
}

for (const backend of backends) {
  describe(`[${backend}] migration 0008-order-change-counts`, () => {
    it('counts the live orders of each business by the UTC day of their updatedAt', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0007-count-shards');
          const db = handle.db as unknown as Kysely<any>;
          for (const b of ['1', '2']) await seedBusiness(db, b);
          const order = (id: string, business: string, updated: string, deleted: string | null = null) =>
            orderRow(id, {
              business_id: business,
              partnership_id: business.replace('bus', 'prt'),
              phase: 'PENDING',
              status: 'UNASSIGNED',
              updated_at: updated,
              deleted_at: deleted,
            });
          await db
            .insertInto('orders')
            .values([
              order('ord_1', 'bus_1', '2025-03-01T23:59:59.999Z'),
              order('ord_2', 'bus_1', '2025-03-01T00:00:00.000Z'),
              order('ord_3', 'bus_1', '2025-03-02T00:00:00.000Z'),
              order('ord_4', 'bus_1', '2025-03-02T10:00:00.000Z', '2025-03-02T10:00:00.000Z'),
              order('ord_5', 'bus_2', '2025-03-01T12:00:00.000Z'),
            ])
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0008-order-change-counts'), [
            '0008-order-change-counts',
          ]);
          const counts = await db
            .selectFrom('order_change_counts')
            .select(['business_id', 'day', 'shard', 'n'])
            .orderBy('business_id')
            .orderBy('day')
            .execute();
          assert.deepEqual(
            counts.map((c) => [c.business_id, c.day, c.shard, Number(c.n)]),
            [
              ['bus_1', '2025-03-01', 0, 2],
              ['bus_1', '2025-03-02', 0, 1],
              ['bus_2', '2025-03-01', 0, 1],
            ],
          );
        } finally {
          await handle.close();
        }
      });
    });
  });
}

for (const backend of backends) {
  describe(`[${backend}] migration 0017-property-counts-by-status`, () => {
    it('counts the live orders of each path by phase and status, from the side table', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0016-order-created-counts');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          const order = (id: string, phase: string, status: string) => orderRow(id, { phase, status });
          await db
            .insertInto('orders')
            .values([
              order('ord_1', 'ACTIVE', 'ACCEPTED'),
              order('ord_2', 'ACTIVE', 'ACCEPTED'),
              order('ord_3', 'PENDING', 'UNASSIGNED'),
            ])
            .execute();
          await db
            .insertInto('order_properties')
            .values([
              { business_id: 'bus_1', order_id: 'ord_1', path: 'erp', value: null },
              { business_id: 'bus_1', order_id: 'ord_1', path: 'erp.no', value: 'n:1e0' },
              { business_id: 'bus_1', order_id: 'ord_2', path: 'erp', value: null },
              { business_id: 'bus_1', order_id: 'ord_3', path: 'erp', value: null },
            ])
            .execute();
          await db
            .insertInto('order_property_counts')
            .values([
              { business_id: 'bus_1', path: 'erp', shard: 0, n: 3 },
              { business_id: 'bus_1', path: 'erp.no', shard: 0, n: 1 },
            ])
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0017-property-counts-by-status'), [
            '0017-property-counts-by-status',
          ]);
          const counts = await db
            .selectFrom('order_property_counts')
            .select(['path', 'phase', 'status', 'shard', 'n'])
            .orderBy('path')
            .orderBy('phase')
            .execute();
          assert.deepEqual(
            counts.map((c) => [c.path, c.phase, c.status, c.shard, Number(c.n)]),
            [
              ['erp', 'ACTIVE', 'ACCEPTED', 0, 2],
              ['erp', 'PENDING', 'UNASSIGNED', 0, 1],
              ['erp.no', 'ACTIVE', 'ACCEPTED', 0, 1],
            ],
          );
        } finally {
          await handle.close();
        }
      });
    });
  });
}

for (const backend of backends) {
  describe(`[${backend}] migration 0029-write-clocks`, () => {
    it("starts each business's clock at the latest time its data shows, so the first write after it is later", async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0028-long-property-values');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          // An updatedAt far ahead of any clock, as an instance whose clock ran ahead would have left.
          const ahead = '2099-01-01T00:00:00.123Z';
          await db
            .insertInto('orders')
            .values([orderRow('ord_1'), orderRow('ord_2', { updated_at: ahead })])
            .execute();
          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0029-write-clocks'), [
            '0029-write-clocks',
          ]);
          const clocks = await db.selectFrom('write_clocks').selectAll().execute();
          assert.deepEqual(
            clocks.map((c) => [c.business_id, Number(c.last_ms)]),
            [['bus_1', Date.parse(ahead)]],
          );
          // The first write after the upgrade, with this release's clock (its later migrations too).
          await migrateToLatest(handle.db, handle.dialect);
          const { takeWriteTime } = await import('../../src/write/clock.ts');
          assert.equal((await takeWriteTime(handle.db, 'bus_1', Date.now())).time, '2099-01-01T00:00:00.124Z');
        } finally {
          await handle.close();
        }
      });
    });
  });

  describe(`[${backend}] migration 0030-order-lines-record-variants`, () => {
    it('records on each existing line its variant as it is at the upgrade, and a later rename leaves it', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0029-write-clocks');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          const stamps = { business_id: 'bus_1', created_at: NOW, updated_at: NOW };
          await db
            .insertInto('items')
            .values({ id: 'itm_1', name: 'Widget', handle: 'widget', type: 'PRODUCT', status: 'ACTIVE', ...stamps })
            .execute();
          await db
            .insertInto('item_variants')
            .values([
              {
                id: 'var_1',
                item_id: 'itm_1',
                variant_name: 'Small',
                sku: 'W-S',
                currency: 'AUD',
                price: '1',
                sequence: 1,
                ...stamps,
              },
              {
                id: 'var_2',
                item_id: 'itm_1',
                variant_name: 'Large',
                sku: null,
                currency: 'AUD',
                price: '2',
                sequence: 2,
                ...stamps,
              },
            ])
            .execute();
          await db
            .insertInto('item_lists')
            .values({
              id: 'list_1',
              label: 'Default',
              status: 'ACTIVE',
              is_default: handle.dialect === 'postgres' ? true : 1,
              global_price_factor: '1',
              global_cost_factor: '1',
              ...stamps,
            })
            .execute();
          await db
            .insertInto('item_list_entries')
            .values([
              { id: 'ile_1', item_list_id: 'list_1', item_variant_id: 'var_1', ...stamps },
              { id: 'ile_2', item_list_id: 'list_1', item_variant_id: 'var_2', ...stamps },
            ])
            .execute();
          await db.insertInto('orders').values(orderRow('ord_1')).execute();
          const line = (id: string, entry: string, n: number) => ({
            id,
            order_id: 'ord_1',
            item_list_entry_id: entry,
            line_number: n,
            quantity: '1',
            unit_of_measure: 'EA',
            currency: 'AUD',
            price: '1',
            cost: '0',
            ...stamps,
          });
          await db
            .insertInto('order_items')
            .values([line('oi_1', 'ile_1', 1), line('oi_2', 'ile_2', 2)])
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0030-order-lines-record-variants'), [
            '0030-order-lines-record-variants',
          ]);
          const { findOrder } = await import('../../src/orders/repository.ts');
          const shown = async () =>
            (await findOrder(handle.db, 'bus_1', 'ord_1'))!.orderItems.map((i) => i.itemListEntry.itemVariant);
          const expected = [
            { id: 'var_1', itemId: 'itm_1', variantName: 'Small', sku: 'W-S' },
            { id: 'var_2', itemId: 'itm_1', variantName: 'Large', sku: null },
          ];
          assert.deepEqual(await shown(), expected);
          await db.updateTable('item_variants').set({ variant_name: 'Renamed', sku: 'NEW' }).execute();
          assert.deepEqual(await shown(), expected);
        } finally {
          await handle.close();
        }
      });
    });
  });

  describe(`[${backend}] migration 0019-deleted-orders`, () => {
    it('counts and indexes the soft-deleted orders as a rebuild does, and not a live order with phase DELETED', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0018-order-phase-status-indexes');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          const order = (id: string, phase: string, deletedAt: string | null, properties: unknown) =>
            orderRow(id, { phase, deleted_at: deletedAt, properties: JSON.stringify(properties) });
          await db
            .insertInto('orders')
            .values([
              order('ord_1', 'ACTIVE', null, { erp: { no: 1 } }),
              order('ord_2', 'DELETED', null, { erp: { no: 2 } }),
              order('ord_3', 'DELETED', NOW, { erp: { no: 3.0 }, tags: ['a'] }),
              order('ord_4', 'ACTIVE', NOW, { x: true }),
            ])
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0019-deleted-orders'), [
            '0019-deleted-orders',
          ]);
          const read = async () => ({
            counts: (
              await db
                .selectFrom('order_deleted_counts')
                .select(['day', 'phase', 'status', 'n'])
                .orderBy('phase')
                .execute()
            ).map((r) => [r.day, r.phase, r.status, Number(r.n)]),
            rows: await db
              .selectFrom('order_deleted_properties')
              .select(['order_id', 'path', 'value'])
              .orderBy('order_id')
              .orderBy('path')
              .execute(),
            days: (await db.selectFrom('order_deleted_change_counts').select(['day', 'n']).execute()).map((r) => [
              r.day,
              Number(r.n),
            ]),
            paths: (
              await db
                .selectFrom('order_deleted_property_counts')
                .select(['path', 'phase', 'n'])
                .orderBy('path')
                .orderBy('phase')
                .execute()
            ).map((r) => [r.path, r.phase, Number(r.n)]),
          });
          const migrated = await read();
          assert.deepEqual(migrated.counts, [
            ['2025-01-01', 'ACTIVE', 'ACCEPTED', 1],
            ['2025-01-01', 'DELETED', 'ACCEPTED', 1],
          ]);
          assert.deepEqual(migrated.days, [['2025-01-01', 2]]);
          assert.deepEqual(
            migrated.rows.map((r) => [r.order_id, r.path, r.value]),
            [
              ['ord_3', 'erp', null],
              ['ord_3', 'erp.no', 'n:3e0'],
              ['ord_3', 'tags', null],
              ['ord_4', 'x', 'b:true'],
            ],
          );
          // The rebuild is today's code, which counts paths per created day too (0022).
          await migrateToLatest(handle.db, handle.dialect);
          assert.deepEqual(await read(), migrated);
          await rebuildOrderProjections(handle.db, 'bus_1');
          assert.deepEqual(await read(), migrated);
        } finally {
          await handle.close();
        }
      });
    });
  });
}

for (const backend of backends) {
  describe(`[${backend}] migration 0022-property-counts-by-day`, () => {
    it('counts the orders of each path by created day, phase and status, live and soft-deleted, as a rebuild does', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0021-drop-events-occurred-index');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          const order = (id: string, createdAt: string, deletedAt: string | null, properties: unknown) =>
            orderRow(id, {
              created_at: createdAt,
              updated_at: createdAt,
              deleted_at: deletedAt,
              properties: JSON.stringify(properties),
            });
          await db
            .insertInto('orders')
            .values([
              order('ord_1', '2025-01-01T23:59:59.999Z', null, { erp: { no: 1 } }),
              order('ord_2', '2025-01-02T00:00:00.000Z', null, { erp: { no: 2 } }),
              order('ord_3', '2025-01-02T10:00:00.000Z', null, { erp: {} }),
              order('ord_4', '2025-01-03T10:00:00.000Z', NOW, { erp: { no: 4 } }),
            ])
            .execute();
          // The side tables and the counts as the code before 0022 kept them.
          await rebuildBefore0022(db);

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0022-property-counts-by-day'), [
            '0022-property-counts-by-day',
          ]);
          const read = async (table: string) =>
            (
              await db
                .selectFrom(table)
                .select(['path', 'day', 'phase', 'status', 'shard', 'n'])
                .orderBy('path')
                .orderBy('day')
                .execute()
            ).map((r) => [r.path, r.day, r.phase, r.status, r.shard, Number(r.n)]);
          const migrated = {
            live: await read('order_property_counts'),
            deleted: await read('order_deleted_property_counts'),
          };
          assert.deepEqual(migrated.live, [
            ['erp', '2025-01-01', 'ACTIVE', 'ACCEPTED', 0, 1],
            ['erp', '2025-01-02', 'ACTIVE', 'ACCEPTED', 0, 2],
            ['erp.no', '2025-01-01', 'ACTIVE', 'ACCEPTED', 0, 1],
            ['erp.no', '2025-01-02', 'ACTIVE', 'ACCEPTED', 0, 1],
          ]);
          assert.deepEqual(migrated.deleted, [
            ['erp', '2025-01-03', 'ACTIVE', 'ACCEPTED', 0, 1],
            ['erp.no', '2025-01-03', 'ACTIVE', 'ACCEPTED', 0, 1],
          ]);
          await migrateToLatest(handle.db, handle.dialect);
          await rebuildOrderProjections(handle.db, 'bus_1');
          assert.deepEqual(
            { live: await read('order_property_counts'), deleted: await read('order_deleted_property_counts') },
            migrated,
          );
        } finally {
          await handle.close();
        }
      });
    });
  });
}

/** The side tables of the test's orders, and their path counts per phase and status (the schema of 0017 to 0021). */
async function rebuildBefore0022(db: Kysely<any>) {
  const paths: Record<string, string[]> = {
    ord_1: ['erp', 'erp.no'],
    ord_2: ['erp', 'erp.no'],
    ord_3: ['erp'],
    ord_4: ['erp', 'erp.no'],
  };
  for (const [orderId, list] of Object.entries(paths)) {
    const table = orderId === 'ord_4' ? 'order_deleted_properties' : 'order_properties';
    await db
      .insertInto(table)
      .values(list.map((path) => ({ business_id: 'bus_1', order_id: orderId, path, value: null })))
      .execute();
  }
  await db
    .insertInto('order_property_counts')
    .values([
      { business_id: 'bus_1', path: 'erp', phase: 'ACTIVE', status: 'ACCEPTED', shard: 0, n: 3 },
      { business_id: 'bus_1', path: 'erp.no', phase: 'ACTIVE', status: 'ACCEPTED', shard: 0, n: 2 },
    ])
    .execute();
  await db
    .insertInto('order_deleted_property_counts')
    .values([
      { business_id: 'bus_1', path: 'erp', phase: 'ACTIVE', status: 'ACCEPTED', shard: 0, n: 1 },
      { business_id: 'bus_1', path: 'erp.no', phase: 'ACTIVE', status: 'ACCEPTED', shard: 0, n: 1 },
    ])
    .execute();
}

for (const backend of backends) {
  describe(`[${backend}] migration 0023-change-counts-by-created-day`, () => {
    it('counts the orders changed on each day by the day they were created, live and soft-deleted, as a rebuild does', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0022-property-counts-by-day');
          const db = handle.db as unknown as Kysely<any>;
          await seedBusiness(db);
          const order = (id: string, createdAt: string, updatedAt: string, deletedAt: string | null = null) =>
            orderRow(id, { created_at: createdAt, updated_at: updatedAt, deleted_at: deletedAt });
          await db
            .insertInto('orders')
            .values([
              order('ord_1', '2025-01-01T10:00:00.000Z', '2025-01-01T11:00:00.000Z'),
              order('ord_2', '2025-01-01T12:00:00.000Z', '2025-01-03T00:00:00.000Z'),
              order('ord_3', '2025-01-02T23:59:59.999Z', '2025-01-03T10:00:00.000Z'),
              order('ord_4', '2025-01-01T09:00:00.000Z', '2025-01-03T09:00:00.000Z', '2025-01-03T09:00:00.000Z'),
            ])
            .execute();
          // The counts as the code before 0023 kept them: per day of updatedAt only.
          await db
            .insertInto('order_change_counts')
            .values([
              { business_id: 'bus_1', day: '2025-01-01', shard: 0, n: 1 },
              { business_id: 'bus_1', day: '2025-01-03', shard: 3, n: 2 },
            ])
            .execute();
          await db
            .insertInto('order_deleted_change_counts')
            .values({ business_id: 'bus_1', day: '2025-01-03', shard: 0, n: 1 })
            .execute();

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0023-change-counts-by-created-day'), [
            '0023-change-counts-by-created-day',
          ]);
          const read = async (table: string) =>
            (
              await db
                .selectFrom(table)
                .select(['day', 'created_day', 'shard', 'n'])
                .orderBy('day')
                .orderBy('created_day')
                .execute()
            ).map((r) => [r.day, r.created_day, r.shard, Number(r.n)]);
          const migrated = {
            live: await read('order_change_counts'),
            deleted: await read('order_deleted_change_counts'),
          };
          assert.deepEqual(migrated.live, [
            ['2025-01-01', '2025-01-01', 0, 1],
            ['2025-01-03', '2025-01-01', 0, 1],
            ['2025-01-03', '2025-01-02', 0, 1],
          ]);
          assert.deepEqual(migrated.deleted, [['2025-01-03', '2025-01-01', 0, 1]]);
          await migrateToLatest(handle.db, handle.dialect);
          await rebuildOrderProjections(handle.db, 'bus_1');
          assert.deepEqual(
            { live: await read('order_change_counts'), deleted: await read('order_deleted_change_counts') },
            migrated,
          );
        } finally {
          await handle.close();
        }
      });
    });
  });
}

for (const backend of backends) {
  describe(`[${backend}] migration 0025-counts-without-rowid`, () => {
    it('keeps every count row; on SQLite the tables become WITHOUT ROWID, and running it again changes nothing', async () => {
      await withEmptyDatabase(backend, async (open) => {
        const handle = open();
        try {
          await migrateToLatest(handle.db, handle.dialect, '0024-created-indexes-with-updated');
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
              orderRow('ord_3', { properties: JSON.stringify({ erp: {} }), deleted_at: NOW }),
            ])
            .execute();
          await rebuildOrderProjections(handle.db, 'bus_1');
          await db
            .insertInto('business_counters')
            .values([
              { business_id: 'bus_1', name: 'event', value: 7 },
              { business_id: 'bus_1', name: 'so', value: 3 },
            ])
            .execute();
          const snapshot = async () =>
            Object.fromEntries(
              await Promise.all(
                WITHOUT_ROWID_TABLES.map(async (table) => {
                  const rows = await db.selectFrom(table).selectAll().execute();
                  return [
                    table,
                    rows
                      .map((r) =>
                        JSON.stringify(
                          Object.entries(r).map(([k, v]) => [
                            k,
                            typeof v === 'bigint' || k === 'n' || k === 'value' ? Number(v) : v,
                          ]),
                        ),
                      )
                      .sort(),
                  ];
                }),
              ),
            );
          const before = await snapshot();
          for (const table of [
            'order_counts',
            'order_created_counts',
            'order_change_counts',
            'order_property_counts',
            'order_deleted_property_counts',
            'business_counters',
          ]) {
            assert.ok(before[table].length > 0, `${table} has rows to keep`);
          }

          assert.deepEqual(await migrateToLatest(handle.db, handle.dialect, '0025-counts-without-rowid'), [
            '0025-counts-without-rowid',
          ]);
          assert.deepEqual(await snapshot(), before);
          if (backend === 'sqlite') {
            const definitions = async () =>
              (
                await sql<{
                  name: string;
                  sql: string;
                }>`select name, sql from sqlite_master where type = 'table'`.execute(db)
              ).rows;
            const made = await definitions();
            for (const table of WITHOUT_ROWID_TABLES) {
              assert.match(made.find((t) => t.name === table)?.sql ?? '', /\)\s*without rowid$/i, table);
            }
            // A second run (a crash after its commit, before the migrator recorded it) finds nothing to do.
            await countsWithoutRowid('sqlite').up(db);
            assert.deepEqual(await definitions(), made);
            assert.ok(!made.some((t) => t.name.endsWith('_without_rowid')), 'no table left under its temporary name');
          }
          // The counts are kept up as before: a rebuild writes the same rows through the upserts.
          await rebuildOrderProjections(handle.db, 'bus_1');
          assert.deepEqual(await snapshot(), before);
        } finally {
          await handle.close();
        }
      });
    });
  });
}
