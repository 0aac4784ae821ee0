import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { ListOrdersOptions } from '../../src/orders/read-model/plan.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { CREATED_SINCE, createOrders, expectedIds } from '../helpers/list-fixture.ts';
import { walkingEveryDay } from '../helpers/orders.ts';

describeEachBackend('GET /api/v1/orders: phase DELETED, which live orders can have too', (ctx) => {
  it('lists live orders PATCHed to DELETED, and with includeDeleted the soft-deleted ones, by counts and by day', async () => {
    const t = await ctx().createTenant();
    await createOrders(ctx(), t);
    let checked = 0;
    for (const includeDeleted of [false, true])
      for (const status of [undefined, 'ACCEPTED'])
        for (const createdSince of [undefined, CREATED_SINCE]) {
          const options: ListOrdersOptions = {
            page: 1,
            limit: 1,
            includeDeleted,
            property: null,
            phase: 'DELETED',
            status,
            createdSince,
          };
          const expected = await expectedIds(ctx(), t, options);
          const params = new URLSearchParams({
            phase: 'DELETED',
            limit: '1',
            ...(includeDeleted ? { includeDeleted: 'true' } : {}),
            ...(status ? { status } : {}),
            ...(createdSince ? { createdSince } : {}),
          });
          const seen: string[] = [];
          for (let page = 1; page <= expected.length + 1; page++) {
            const res = await walkingEveryDay(() =>
              ctx().request('GET', `/api/v1/orders?${params}&page=${page}`, { as: t }),
            );
            assert.equal(res.status, 200);
            assert.equal(res.body.total, expected.length, `${params} page ${page}`);
            seen.push(...res.body.items.map((o: { id: string }) => o.id));
          }
          assert.deepEqual(seen, expected, String(params));
          checked++;
        }
    assert.equal(checked, 8);
    // The fixture has both kinds: one live order with phase DELETED, and deleted ones with it.
    assert.equal(
      (await expectedIds(ctx(), t, { page: 1, limit: 1, includeDeleted: false, property: null, phase: 'DELETED' }))
        .length,
      1,
    );
    assert.ok(
      (await expectedIds(ctx(), t, { page: 1, limit: 1, includeDeleted: true, property: null, phase: 'DELETED' }))
        .length >= 4,
    );
  });
});
