import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { generateDemo, type DemoResult } from '../../src/demo/generate.ts';
import { deflateRawSync } from 'node:zlib';
import { createDeflater, TextRun } from '../../src/demo/deflate-worker.ts';
import { DATA_DEFLATE_OPTIONS, decodeDataText } from '../../src/log/codec.ts';
import { exportOrders } from '../../src/orders/export-repository.ts';
import { rebuildOrderProjections } from '../../src/orders/read-model/projections.ts';
import { backends, checkResponsesOf, createTestDatabase, type TestDatabase } from '../helpers/context.ts';
import { assertChangeCountsExact } from '../helpers/orders.ts';

const ORDERS = 1_200;

/** Every index of the database's schema with its definition (the schema's own name taken out); on PostgreSQL, its constraints too. */
async function indexesOf(database: TestDatabase): Promise<string[]> {
  const { db } = database.handle;
  if (database.schema === undefined) {
    const { rows } = await sql<{
      name: string;
      sql: string | null;
    }>`select name, sql from sqlite_master where type = 'index'`.execute(db);
    return rows.map((r) => `${r.name} ${r.sql ?? ''}`).sort();
  }
  const { rows } = await sql<{
    name: string;
    sql: string;
  }>`select indexname as name, indexdef as sql from pg_indexes where schemaname = current_schema()
    union all select c.relname || '.' || k.conname, pg_get_constraintdef(k.oid) from pg_constraint k join pg_class c on c.oid = k.conrelid
      where c.relnamespace = current_schema()::regnamespace`.execute(db);
  return rows.map((r) => `${r.name} ${r.sql.replaceAll(`${database.schema}.`, '')}`).sort();
}

for (const backend of backends) {
  describe(`[${backend}] demo data generator`, () => {
    let database: TestDatabase;
    let app: App;
    let demo: DemoResult;
    const get = async (url: string) => {
      const res = await app.inject({
        method: 'GET',
        url,
        headers: { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey },
      });
      return { status: res.statusCode, body: res.json() };
    };

    before(async () => {
      database = await createTestDatabase(backend);
      // The derived counts are written whenever a tally holds 100 keys, so many times over the
      // load, each adding to rows earlier writes made; the test of the derived tables checks the sums.
      demo = await generateDemo(database.handle.db, { orders: ORDERS, items: 12, buyers: 6, countKeysHeld: 100 });
      app = await createApp({
        db: database.handle.db,
        config: Object.freeze(loadConfig({ RATE_LIMIT_RPS: '0' })),
        rateLimiter: null,
      });
      await app.ready();
      checkResponsesOf(app);
    });
    after(async () => {
      await app?.close();
      await database?.handle.close();
      await database?.drop();
    });

    it('creates the requested numbers of rows, with the usual id prefixes', async () => {
      const { db } = database.handle;
      const count = async (table: 'orders' | 'items' | 'phantoms' | 'partnerships' | 'order_items') =>
        Number(
          (
            await db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .where('business_id', '=', demo.businessId)
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.equal(await count('orders'), ORDERS);
      assert.equal(await count('items'), 12);
      assert.equal(await count('phantoms'), 6);
      assert.equal(await count('partnerships'), 6);
      assert.equal(await count('order_items'), demo.orderItems);
      const variants = await db
        .selectFrom('item_variants')
        .select('id')
        .where('business_id', '=', demo.businessId)
        .execute();
      const entries = await db
        .selectFrom('item_list_entries')
        .innerJoin('item_lists', 'item_lists.id', 'item_list_entries.item_list_id')
        .select('item_list_entries.id')
        .where('item_lists.business_id', '=', demo.businessId)
        .where('item_lists.is_default', '=', 1)
        .execute();
      assert.equal(entries.length, variants.length, 'every variant is on the default list');
      assert.ok(variants.length >= 12 && variants.length <= 48);
      const orders = await db
        .selectFrom('orders')
        .select(['id', 'partnership_id', 'created_at', 'updated_at', 'version'])
        .where('business_id', '=', demo.businessId)
        .execute();
      for (const o of orders) {
        assert.match(o.id, /^ord_[0-9a-z]{26}$/);
        assert.match(o.partnership_id, /^prt_/);
        assert.ok(new Date(o.updated_at).getTime() >= new Date(o.created_at).getTime());
        assert.equal(Number(o.version), 1);
      }
      const item = await db
        .selectFrom('order_items')
        .select(['id', 'item_list_entry_id'])
        .where('business_id', '=', demo.businessId)
        .executeTakeFirstOrThrow();
      assert.match(item.id, /^oi_/);
      assert.match(item.item_list_entry_id, /^ile_/);
      if (backend === 'sqlite') {
        assert.deepEqual((await sql`pragma foreign_key_check`.execute(db)).rows, []);
        assert.equal((await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)).rows[0].foreign_keys, 1);
      }
    });

    it('makes the derived order tables exactly as a rebuild from its orders does', async () => {
      const { db } = database.handle;
      const tables = [
        'order_counts',
        'order_change_counts',
        'order_deleted_change_counts',
        'order_created_counts',
        'order_deleted_counts',
        'order_properties',
        'order_deleted_properties',
        'order_property_counts',
        'order_deleted_property_counts',
      ] as const;
      const snapshot = async () => {
        const out: Record<string, string[]> = {};
        for (const table of tables) {
          const { rows } = await sql<
            Record<string, unknown>
          >`select * from ${sql.table(table)} where business_id = ${demo.businessId}`.execute(db);
          out[table] = rows
            .map((r) =>
              JSON.stringify(
                Object.entries(r)
                  .sort(([a], [b]) => (a < b ? -1 : 1))
                  .map(([k, v]) => [k, String(v)]),
              ),
            )
            .sort();
        }
        return out;
      };
      const loaded = await snapshot();
      assert.ok(loaded.order_properties.length > ORDERS / 2, 'about one path row per live order or more');
      assert.ok(loaded.order_deleted_counts.length > 0, 'soft-deleted orders are counted too');
      await db.transaction().execute((trx) => rebuildOrderProjections(trx, demo.businessId));
      assert.deepEqual(loaded, await snapshot());
    });

    it('leaves the indexes (and constraints) the migrations make, after a load into empty tables and after one beside another business', async () => {
      const fresh = await createTestDatabase(backend);
      try {
        const expected = await indexesOf(fresh);
        assert.ok(
          expected.some((i) => i.startsWith('orders_all_phase_status_idx ')),
          'the orders table has secondary indexes',
        );
        assert.deepEqual(await indexesOf(database), expected);
        const more = await generateDemo(database.handle.db, { orders: 120, items: 3, buyers: 2 });
        assert.equal(more.orders, 120);
        assert.deepEqual(await indexesOf(database), expected);
      } finally {
        await fresh.handle.close();
        await fresh.drop();
      }
    });

    it('rolls a failed load into empty tables back with every index in place', async () => {
      const empty = await createTestDatabase(backend);
      try {
        const expected = await indexesOf(empty);
        const failing = generateDemo(empty.handle.db, {
          orders: 3_000,
          items: 3,
          buyers: 2,
          onProgress: (done) => {
            if (done >= 2_000) throw new Error('the load dies half way');
          },
        });
        await assert.rejects(failing, /the load dies half way/);
        assert.deepEqual(await indexesOf(empty), expected);
        const orders = await empty.handle.db
          .selectFrom('orders')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(orders.n), 0);
        // And a load after it takes the same path to the same end.
        await generateDemo(empty.handle.db, { orders: 300, items: 3, buyers: 2 });
        assert.deepEqual(await indexesOf(empty), expected);
      } finally {
        await empty.handle.close();
        await empty.drop();
      }
    });

    if (backend === 'sqlite') {
      const pragma = async (db: TestDatabase['handle']['db'], name: string) =>
        Object.values((await sql.raw(`pragma ${name}`).execute(db)).rows[0] as object)[0];

      it("restores the connection's settings and WAL after loading in a rollback journal", async () => {
        const settings = async (db: TestDatabase['handle']['db']) => [
          await pragma(db, 'journal_mode'),
          await pragma(db, 'synchronous'),
          await pragma(db, 'foreign_keys'),
          await pragma(db, 'cache_size'),
          await pragma(db, 'busy_timeout'),
        ];
        const fresh = createDatabase(database.url);
        try {
          assert.deepEqual(await settings(database.handle.db), await settings(fresh.db));
          assert.equal(await pragma(fresh.db, 'journal_mode'), 'wal');
        } finally {
          await fresh.close();
        }
      });

      it('loads in WAL mode, unchanged, while another connection has the file open', async () => {
        const other = createDatabase(database.url);
        try {
          await sql`select count(*) from orders`.execute(other.db);
          const more = await generateDemo(database.handle.db, { orders: 50, items: 3, buyers: 2 });
          assert.equal(
            Number(
              (
                await sql<{
                  n: number;
                }>`select count(*) as n from orders where business_id = ${more.businessId}`.execute(other.db)
              ).rows[0].n,
            ),
            50,
          );
          assert.equal(await pragma(database.handle.db, 'journal_mode'), 'wal');
          assert.equal(await pragma(other.db, 'journal_mode'), 'wal');
        } finally {
          await other.close();
        }
      });
    }

    if (backend === 'postgres') {
      it('leaves the loaded tables vacuumed and analysed, as after any bulk load', async () => {
        const rows = await sql<{ relname: string; vacuumed: boolean; analysed: boolean }>`select relname,
            last_vacuum is not null as vacuumed, last_analyze is not null as analysed
          from pg_stat_user_tables where schemaname = ${database.schema!} and relname in ('orders', 'order_items', 'order_properties')`.execute(
          database.handle.db,
        );
        assert.deepEqual(rows.rows.map((r) => [r.relname, r.vacuumed, r.analysed]).sort(), [
          ['order_items', true, true],
          ['order_properties', true, true],
          ['orders', true, true],
        ]);
      });
    }

    it('writes the events its data implies: 1..N, and the feed rebuilds every live order as GET shows it', async () => {
      const events: any[] = [];
      const texts = new Map<number, string>();
      for (let after = 0; ; ) {
        const page = await get(`/api/v1/events?after=${after}&limit=1000`);
        assert.equal(page.status, 200);
        events.push(...page.body.items);
        after = page.body.lastSequence;
        if (!page.body.hasMore) break;
      }
      assert.equal(events.length, demo.events);
      assert.deepEqual(
        events.map((e) => e.sequence),
        events.map((_, i) => i + 1),
      );
      const count = (type: string) => events.filter((e) => e.type === type).length;
      assert.equal(count('api_key.created'), 1);
      assert.equal(count('item.created'), 12);
      assert.equal(count('buyer.created'), 6);
      assert.equal(count('order.created'), ORDERS);
      for (const e of events) texts.set(e.sequence, JSON.stringify(e.data.object));

      // Every order's events, deleted ones too, carry the order as the database renders it now, key for key.
      const stored = new Map<string, string>();
      for (let after = ''; ; ) {
        const page = await exportOrders(database.handle.db, demo.businessId, after, 500, { includeDeleted: true });
        if (page.length === 0) break;
        for (const o of page) stored.set(o.id, JSON.stringify(o));
        after = page.at(-1)!.id;
      }
      assert.equal(stored.size, ORDERS);
      const copy = new Map<string, any>();
      const versions = new Map<string, number>();
      for (const e of events.filter((x) => x.resourceType === 'order')) {
        assert.equal(texts.get(e.sequence), stored.get(e.resourceId), `${e.type} ${e.resourceId}`);
        const at = { 'order.created': 'createdAt', 'order.updated': 'updatedAt', 'order.deleted': 'deletedAt' }[
          e.type as string
        ]!;
        assert.equal(e.occurredAt, e.data.object[at]);
        versions.set(e.resourceId, (versions.get(e.resourceId) ?? 0) + 1);
        assert.equal(e.resourceVersion, versions.get(e.resourceId));
        if (e.type === 'order.deleted') copy.delete(e.resourceId);
        else copy.set(e.resourceId, e.data.object);
      }
      const live = await get('/api/v1/orders?limit=1');
      assert.equal(copy.size, live.body.total);
      // And each live one exactly as its GET answers, key for key.
      for (const order of copy.values()) {
        const res = await app.inject({
          method: 'GET',
          url: `/api/v1/orders/${order.id}`,
          headers: { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey },
        });
        assert.equal(JSON.stringify(order), JSON.stringify(res.json()));
      }
      for (const e of events.filter((x) => x.resourceType === 'item' || x.resourceType === 'buyer')) {
        assert.deepEqual(e.data.object, (await get(`/api/v1/${e.resourceType}s/${e.resourceId}`)).body);
      }
    });

    it('ships every shipped order in full, about one shipment an order, with events that rebuild each shipment as GET shows it', async () => {
      const { db } = database.handle;
      const shipments = await db
        .selectFrom('shipments')
        .select(['id', 'order_id'])
        .where('business_id', '=', demo.businessId)
        .execute();
      assert.equal(shipments.length, demo.shipments);
      assert.ok(
        demo.shipments > ORDERS * 0.8 && demo.shipments < ORDERS * 1.2,
        `about one shipment an order: ${demo.shipments}`,
      );
      const orders = await db
        .selectFrom('orders')
        .select(['id', 'status', 'shipped_at', 'deleted_at'])
        .where('business_id', '=', demo.businessId)
        .execute();
      const shippedOrders = orders.filter(
        (o) => ['IN_TRANSIT', 'DELIVERED', 'RETURNED'].includes(o.status) && o.deleted_at === null,
      );
      assert.deepEqual(new Set(shipments.map((s) => s.order_id)), new Set(shippedOrders.map((o) => o.id)));
      const events: any[] = [];
      for (let after = 0; ; ) {
        const page = await get(`/api/v1/events?after=${after}&limit=1000&types=shipment.*`);
        events.push(...page.body.items);
        after = page.body.lastSequence;
        if (!page.body.hasMore) break;
      }
      assert.equal(events.filter((e) => e.type === 'shipment.created').length, demo.shipments);
      const byOrder = new Map<string, any[]>();
      for (const e of events) {
        const shown = await app.inject({
          method: 'GET',
          url: `/api/v1/shipments/${e.resourceId}`,
          headers: { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey },
        });
        assert.equal(JSON.stringify(e.data.object), JSON.stringify(shown.json()), `${e.type} ${e.resourceId}`);
        assert.equal(e.occurredAt, e.data.object[e.type === 'shipment.created' ? 'createdAt' : 'updatedAt']);
        if (e.type === 'shipment.created')
          byOrder.set(e.data.object.orderId, [...(byOrder.get(e.data.object.orderId) ?? []), e.data.object]);
      }
      // Each shipped order: every line shipped exactly once in full, the last shipment at the order's shippedAt.
      for (const order of shippedOrders.slice(0, 200)) {
        const got = (await get(`/api/v1/orders/${order.id}`)).body;
        const held = new Map<string, number>();
        for (const s of byOrder.get(order.id)!) {
          assert.equal(s.status, order.status);
          for (const l of s.lines) held.set(l.orderItemId, (held.get(l.orderItemId) ?? 0) + l.quantity);
          const inPackages = s.packages.flatMap((p: any) => p.lines).reduce((n: number, l: any) => n + l.quantity, 0);
          assert.equal(
            inPackages,
            s.lines.reduce((n: number, l: any) => n + l.quantity, 0),
          );
          assert.ok(s.packages.every((p: any) => /^\d{18}$/.test(p.sscc)));
        }
        assert.deepEqual(held, new Map(got.orderItems.map((i: any) => [i.id, i.quantity])));
        assert.equal(
          Math.max(...byOrder.get(order.id)!.map((s) => Date.parse(s.shippedAt))),
          Date.parse(got.shippedAt),
        );
      }
      const listed = await get('/api/v1/shipments?modifiedSince=2000-01-01T00:00:00Z&limit=5');
      assert.equal(listed.body.total, demo.shipments);
    });

    it('numbers orders SO-000001 upwards in createdAt order, and the counter continues from there', async () => {
      const { db } = database.handle;
      const refs = await db
        .selectFrom('orders')
        .select('internal_reference')
        .where('business_id', '=', demo.businessId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        refs.map((r) => r.internal_reference),
        refs.map((_, i) => `SO-${String(i + 1).padStart(6, '0')}`),
      );
      const counter = await db
        .selectFrom('business_counters')
        .select('value')
        .where('business_id', '=', demo.businessId)
        .where('name', '=', 'order')
        .executeTakeFirstOrThrow();
      assert.equal(Number(counter.value), ORDERS);
    });

    it('is served by the API: lists with exact totals, GET and PATCH work on generated orders', async () => {
      const list = await get('/api/v1/orders?limit=100');
      assert.equal(list.status, 200);
      const deleted = Number(
        (
          await database.handle.db
            .selectFrom('orders')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('business_id', '=', demo.businessId)
            .where('deleted_at', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.equal(list.body.total, ORDERS - deleted);
      // The maintained counts the totals come from equal a brute-force count per phase and status.
      const live = await database.handle.db
        .selectFrom('orders')
        .select(['phase', 'status'])
        .select((eb) => eb.fn.countAll().as('n'))
        .where('business_id', '=', demo.businessId)
        .where('deleted_at', 'is', null)
        .groupBy(['phase', 'status'])
        .execute();
      const counted = await database.handle.db
        .selectFrom('order_counts')
        .select(['phase', 'status', sql<string>`sum(n)`.as('n')])
        .where('business_id', '=', demo.businessId)
        .groupBy(['phase', 'status'])
        .having(sql`sum(n)`, '<>', 0)
        .execute();
      const key = (r: { phase: string; status: string; n: unknown }) => `${r.phase}/${r.status}=${Number(r.n)}`;
      assert.deepEqual(counted.map(key).sort(), live.map(key).sort());
      for (const { phase, status, n } of live) {
        assert.equal((await get(`/api/v1/orders?limit=1&phase=${phase}&status=${status}`)).body.total, Number(n));
      }
      // And the changed-since counts, per day of updatedAt, with a window total against a brute-force count.
      const changed = await assertChangeCountsExact(database.handle.db, demo.businessId);
      const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
      assert.equal(
        (await get(`/api/v1/orders?limit=1&modifiedSince=${since}`)).body.total,
        changed.live.filter((u) => u > since).length,
      );
      assert.equal(list.body.items.length, 100);
      const withItems = list.body.items.find((o: { orderItems: unknown[] }) => o.orderItems.length > 1);
      assert.ok(withItems);

      const one = await get(`/api/v1/orders/${withItems.id}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, withItems);
      const sum = withItems.orderItems.reduce(
        (s: number, i: { quantity: number; price: string }) => s + i.quantity * Number(i.price),
        0,
      );
      assert.ok(Math.abs(sum - Number(withItems.totalAmount)) < 0.005, 'totalAmount is the sum of quantity × price');

      const patched = await app.inject({
        method: 'PATCH',
        url: `/api/v1/orders/${withItems.id}`,
        headers: { 'x-business-id': demo.businessId, 'x-api-key': demo.apiKey, 'content-type': 'application/json' },
        payload: JSON.stringify({
          order: { properties: { sage200Evo: { salesOrderNo: 999_999 } } },
          updateOrderItems: [{ id: withItems.orderItems[0].id, quantity: 7 }],
        }),
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal(patched.json().version, 2);

      const synced = await get('/api/v1/orders?propertyPath=sage200Evo.salesOrderNo&propertyValue=999999');
      assert.equal(synced.status, 200);
      assert.equal(synced.body.total, 1);
      const unsynced = await get('/api/v1/orders?propertyPath=sage200Evo.salesOrderNo&propertyExists=false');
      assert.equal(unsynced.status, 200);
      assert.ok(
        unsynced.body.total > ORDERS * 0.4 && unsynced.body.total < ORDERS * 0.9,
        `about 60% unsynced, got ${unsynced.body.total}`,
      );
      const active = await get('/api/v1/orders?phase=ACTIVE&status=ACCEPTED');
      assert.equal(active.status, 200);
    });
  });
}

describe('demo event deflater', () => {
  it('gives the bytes encodeData gives, text by text, over sizes from empty to past its buffers', async () => {
    const deflater = createDeflater();
    try {
      const texts = [
        '',
        '{}',
        ...[1, 10, 100, 1_000, 5_000, 40_000].map((n) =>
          JSON.stringify({ object: { n, items: Array.from({ length: n }, (_, i) => ({ i, id: `oi_${i}` })) } }),
        ),
      ];
      // Text that does not compress: its deflated form is longer than the text itself.
      texts.push(
        Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919 + (i >> 3) * 104_729) % 251)).toString(
          'latin1',
        ),
      );
      texts.push('{"object":{"name":"Crème brûlée 🍮"}}');
      const run = new TextRun();
      for (const text of texts) run.push(text);
      const stored = await deflater.deflate(run);
      assert.equal(stored.length, texts.length);
      stored.forEach((bytes, i) => {
        assert.ok(bytes.equals(deflateRawSync(texts[i], DATA_DEFLATE_OPTIONS)), `text ${i}`);
        assert.equal(decodeDataText(bytes), texts[i]);
      });
    } finally {
      await deflater.close();
    }
  });
});
