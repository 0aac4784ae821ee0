import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachBackend } from '../helpers/context.ts';
import { orderOfThree, shipOk } from './helpers.ts';

let now = Date.parse('2030-01-01T00:00:00.000Z');
const clock = () => now;
const MINUTE = 60_000;

/**
 * `GET /api/v1/shipments?modifiedSince=` reads shipments created since the time and those created
 * before it and changed since as two parts (src/fulfilment/shipment-repository.ts): every page, by
 * number or by cursor, with other filters or none, is the brute-force answer's.
 */
describeEachBackend(
  'GET /api/v1/shipments?modifiedSince',
  (ctx) => {
    it('pages through what changed since any time exactly as a brute-force filter of every shipment does', async () => {
      const t = await ctx().createTenant();
      const orders = [await orderOfThree(ctx(), t), await orderOfThree(ctx(), t)];
      const made: any[] = [];
      for (let i = 0; i < 12; i++) {
        now += MINUTE;
        const { order, lines } = orders[i % 2];
        made.push(await shipOk(ctx(), t, order.id, { lines: [{ orderItemId: lines.a, quantity: 1 }] }));
      }
      // Older shipments changed later: delivered, returned, voided, in an order unlike their creation's.
      for (const [i, change] of [
        [1, { status: 'DELIVERED' }],
        [7, { status: 'RETURNED' }],
        [0, { service: 'Ground' }],
        [4, null],
        [10, { status: 'DELIVERED' }],
      ] as const) {
        now += MINUTE;
        const res = change
          ? await ctx().request('PATCH', `/api/v1/shipments/${made[i].id}`, { as: t, body: change })
          : await ctx().request('DELETE', `/api/v1/shipments/${made[i].id}`, { as: t });
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }
      const all = (await ctx().request('GET', '/api/v1/shipments?limit=100', { as: t })).body.items as any[];
      assert.equal(all.length, 12);
      const list = (q: string) => ctx().request('GET', `/api/v1/shipments?${q}`, { as: t });
      const times = [
        '2029-12-31T00:00:00.000Z',
        ...made.map((s) => s.createdAt),
        ...all.map((s) => s.updatedAt),
        new Date(now + MINUTE).toISOString(),
      ];
      const filters: Array<[string, (s: any) => boolean]> = [
        ['', () => true],
        [`orderId=${orders[0].order.id}`, (s) => s.orderId === orders[0].order.id],
        ['status=DELIVERED', (s) => s.status === 'DELIVERED'],
      ];
      for (const since of [...new Set(times)]) {
        for (const [filter, keep] of filters) {
          const expected = all.filter((s) => s.updatedAt > since && keep(s)).map((s) => s.id);
          for (const limit of [1, 3, 5]) {
            const q = `modifiedSince=${encodeURIComponent(since)}&limit=${limit}${filter ? `&${filter}` : ''}`;
            const walked: string[] = [];
            let page = await list(q);
            for (let n = 0; n < 20; n++) {
              assert.equal(page.status, 200, JSON.stringify(page.body));
              assert.equal(page.body.total, expected.length, `${q} total`);
              walked.push(...page.body.items.map((s: any) => s.id));
              if (!page.body.nextCursor) break;
              page = await list(`${q}&cursor=${encodeURIComponent(page.body.nextCursor)}`);
            }
            assert.deepEqual(walked, expected, `${q} by cursor`);
            const numbered: string[] = [];
            for (let p = 1; p <= Math.ceil(expected.length / limit) + 1; p++)
              numbered.push(...(await list(`${q}&page=${p}`)).body.items.map((s: any) => s.id));
            assert.deepEqual(numbered, expected, `${q} by page number`);
          }
        }
      }
    });
  },
  { clock },
);
