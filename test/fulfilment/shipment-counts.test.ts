import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Decimal } from 'decimal.js';
import { sql, type Kysely } from 'kysely';
import { rebuildShipmentCounts } from '../../src/fulfilment/shipment-counts.ts';
import { rebuildShippedQuantities } from '../../src/fulfilment/shipped-quantities.ts';
import type { Database } from '../../src/db/types.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { orderOfThree, ship } from './helpers.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';

let now = Date.parse('2030-03-01T20:00:00.000Z');
const clock = () => now;
const HOUR = 3_600_000;

/** A small seeded generator, so that a failure can be replayed. */
function randomOf(seed: number) {
  let state = seed;
  return (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
}

/** The shipment counts (nets per key, zeros left out) and the lines' shipped quantities, as stored. */
async function kept(db: Kysely<Database>, businessId: string) {
  const counts = await sql<{ status: string; n: string }>`select status, sum(n) as n from shipment_counts
    where business_id = ${businessId} group by status having sum(n) <> 0 order by status`.execute(db);
  const days = await sql<{
    key: string;
    n: string;
  }>`select day || ' ' || created_day || ' ' || status as key, sum(n) as n
    from shipment_change_counts where business_id = ${businessId} group by day, created_day, status
    having sum(n) <> 0 order by 1`.execute(db);
  const lines = await db
    .selectFrom('order_items')
    .select(['id', 'shipped_quantity'])
    .where('business_id', '=', businessId)
    .orderBy('id')
    .execute();
  return {
    counts: counts.rows.map((r) => [r.status, Number(r.n)]),
    days: days.rows.map((r) => [r.key, Number(r.n)]),
    lines: lines.map((l) => [l.id, new Decimal(l.shipped_quantity).toFixed()]),
  };
}

/**
 * What shipment writes keep beside the shipments (migration 0045) never drifts: after random creates,
 * PATCHes and voids over several days, the counts and shipped quantities are what a rebuild from the
 * shipments makes, and a list's total, read from the counts, is a brute-force count for any status,
 * createdSince and modifiedSince, at and around day boundaries.
 */
describeEachBackend(
  'shipment counts and shipped quantities',
  (ctx) => {
    it('stay exact through random creates, PATCHes and voids, and give every list its exact total', async () => {
      const t = await ctx().createTenant();
      const other = await ctx().createTenant();
      const orders = [await orderOfThree(ctx(), t), await orderOfThree(ctx(), t)];
      await ship(ctx(), other, (await orderOfThree(ctx(), other)).order.id, {
        lines: [{ orderItemId: (await orderOfThree(ctx(), other)).lines.a, quantity: 1 }],
      });
      const random = randomOf(64);
      const made: string[] = [];
      for (let step = 0; step < 36; step++) {
        now += (1 + random(14)) * HOUR;
        const kind = made.length === 0 ? 0 : random(4);
        if (kind <= 1) {
          const { order, lines } = orders[random(2)];
          const line = [lines.a, lines.b, lines.c][random(3)];
          const res = await ship(ctx(), t, order.id, { lines: [{ orderItemId: line, quantity: 1 + random(2) }] });
          if (res.status === 201) made.push(res.body.id);
          else assert.equal(res.status, 409, JSON.stringify(res.body));
        } else {
          const id = made[random(made.length)];
          const status = ['IN_TRANSIT', 'DELIVERED', 'RETURNED'][random(3)];
          const res =
            kind === 2
              ? await ctx().request('PATCH', `/api/v1/shipments/${id}`, { as: t, body: { status } })
              : await ctx().request('DELETE', `/api/v1/shipments/${id}`, { as: t });
          assert.ok(res.status === 200 || res.status === 409, JSON.stringify(res.body));
        }
      }

      const maintained = await kept(ctx().db, t.businessId);
      await rebuildShipmentCounts(ctx().db, t.businessId);
      await rebuildShippedQuantities(ctx().db, t.businessId);
      assert.deepEqual(maintained, await kept(ctx().db, t.businessId));
      assert.ok(maintained.days.length > 4, 'shipments over several days');

      const all = (await ctx().request('GET', '/api/v1/shipments?limit=100', { as: t })).body.items as any[];
      assert.equal(all.length, made.length);
      const stamps = [...new Set(all.flatMap((s) => [s.createdAt, s.updatedAt]))].sort();
      const times = ['2030-01-01T00:00:00.000Z'];
      for (let i = 0; i < 4; i++) {
        const stamp = stamps[random(stamps.length)];
        times.push(stamp, `${stamp.slice(0, 10)}T00:00:00.000Z`, `${stamp.slice(0, 10)}T23:59:59.999Z`);
      }
      const total = async (query: string) => {
        const res = await ctx().request('GET', `/api/v1/shipments?limit=1&${query}`, { as: t });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.total;
      };
      for (const status of [undefined, 'DELIVERED', 'VOIDED']) {
        const of = all.filter((s) => status === undefined || s.status === status);
        const byStatus = status ? `status=${status}` : '';
        assert.equal(await total(byStatus), of.length, byStatus);
        for (const created of [undefined, ...times])
          for (const changed of [undefined, ...times.slice(0, 7)]) {
            const q = [byStatus, created && `createdSince=${created}`, changed && `modifiedSince=${changed}`];
            const expected = of.filter(
              (s) => (!created || s.createdAt > created) && (!changed || s.updatedAt > changed),
            );
            assert.equal(await total(q.filter(Boolean).join('&')), expected.length, q.join(' '));
          }
      }
    });

    it('rebuild fractional shipped quantities exactly, as decimals, on SQLite too', async () => {
      const t = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, f, {
        orderItems: [
          { itemVariantId: f.variantIds[0], quantity: 0.8 },
          { itemVariantId: f.variantIds[1], quantity: 123456.654321 },
          { itemVariantId: f.variantIds[2], quantity: 3 },
        ],
      });
      const [kg, big, whole] = order.orderItems.map((i: { id: string }) => i.id);
      for (const lines of [
        [{ orderItemId: kg, quantity: 0.1 }],
        [
          { orderItemId: kg, quantity: 0.7 },
          { orderItemId: big, quantity: 0.000001 },
        ],
        [{ orderItemId: big, quantity: 123456.65432 }],
        [{ orderItemId: whole, quantity: 2 }],
      ])
        assert.equal((await ship(ctx(), t, order.id, { lines })).status, 201);
      const stored = () =>
        ctx()
          .db.selectFrom('order_items')
          .select(['id', 'shipped_quantity'])
          .where('order_id', '=', order.id)
          .orderBy('line_number')
          .execute();
      const maintained = await stored();
      assert.deepEqual(
        maintained.map((l) => l.shipped_quantity),
        ['0.8', '123456.654321', '2'],
      );
      await rebuildShippedQuantities(ctx().db, t.businessId);
      assert.deepEqual(await stored(), maintained);
    });
  },
  { clock },
);
