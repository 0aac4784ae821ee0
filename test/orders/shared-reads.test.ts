import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/connection.ts';
import { routesPerRequest } from '../../src/db/replicas/index.ts';
import { findOrderRow } from '../../src/orders/repository.ts';
import { loadOneOrderItems } from '../../src/orders/items-repository.ts';
import { readOrderVersion } from '../../src/orders/shared-reads.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';

/**
 * A cached GET's one query, its order's version (src/orders/shared-reads.ts): on PostgreSQL the
 * checks that arrive while one is on its way share the next statement. Each still answers for its
 * own business's live order, and sees every write answered before it asked.
 */
describeEachBackend('Order reads shared by requests', (ctx) => {
  /** The test database counting its statements, and failing them while `failing` is set. */
  const counting = () => {
    const state = { statements: 0, failing: false };
    const db = ctx().db.withPlugin({
      transformQuery: (args) => {
        state.statements++;
        if (state.failing) throw new Error('the database went away');
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    return { db, state };
  };

  it("answers checks that arrive together each with its own business's live order, in two statements on PostgreSQL", async () => {
    const owner = await ctx().createTenant();
    const stranger = await ctx().createTenant('Other Supplier');
    const f = await createFixture(ctx(), owner);
    const [a, b, gone] = [
      await createOrder(ctx(), owner, f),
      await createOrder(ctx(), owner, f),
      await createOrder(ctx(), owner, f),
    ];
    const theirs = await createOrder(ctx(), stranger, await createFixture(ctx(), stranger));
    assert.equal((await patchOrder(ctx(), owner, b.id, { order: { notes: 'twice' } })).status, 200);
    assert.equal((await ctx().request('DELETE', `/api/v1/orders/${gone.id}`, { as: owner })).status, 204);

    const { db, state } = counting();
    const asked: Array<[string, string]> = [
      [owner.businessId, a.id],
      [owner.businessId, b.id],
      [stranger.businessId, a.id],
      [stranger.businessId, theirs.id],
      [owner.businessId, theirs.id],
      [owner.businessId, gone.id],
      [owner.businessId, 'ord_missing'],
      [owner.businessId, a.id],
    ];
    const versions = await Promise.all(asked.map(([business, id]) => readOrderVersion(db, business, id)));
    assert.deepEqual(versions, [1, 2, undefined, 1, undefined, undefined, undefined, 1]);
    // The first goes alone; the seven that asked while it was on its way go in one statement.
    assert.equal(state.statements, ctx().backend === 'postgres' ? 2 : asked.length);

    // Order rows read outside a write (an announcement's, a PATCH's before the lock) are shared alike.
    state.statements = 0;
    const found = await Promise.all(asked.map(([business, id]) => findOrderRow(db, business, id)));
    assert.deepEqual(
      found.map((row) => row && [row.id, row.business_id, Number(row.version), row.notes]),
      [
        [a.id, owner.businessId, 1, null],
        [b.id, owner.businessId, 2, 'twice'],
        undefined,
        [theirs.id, stranger.businessId, 1, null],
        undefined,
        undefined,
        undefined,
        [a.id, owner.businessId, 1, null],
      ],
    );
    assert.equal(state.statements, ctx().backend === 'postgres' ? 2 : asked.length);
    state.statements = 0;
    const items = await Promise.all(asked.map(([business, id]) => loadOneOrderItems(db, business, id)));
    const lines = (order: { orderItems: Array<{ id: string }> }) => order.orderItems.map((i) => i.id);
    assert.deepEqual(
      items.map((rows) => rows.map((i) => i.id)),
      [lines(a), lines(b), [], lines(theirs), [], lines(gone), [], lines(a)],
      "each order's items in line order; a deleted order's stay, as its row's reader decides",
    );
    assert.equal(state.statements, ctx().backend === 'postgres' ? 2 : asked.length);
    // In a transaction, each read is the transaction's own statement.
    await ctx()
      .db.transaction()
      .execute(async (trx) => {
        assert.equal((await findOrderRow(trx, owner.businessId, b.id))?.notes, 'twice');
      });

    // A check that asks after a write was answered reads the write.
    assert.equal((await patchOrder(ctx(), owner, a.id, { order: { notes: 'again' } })).status, 200);
    assert.equal(await readOrderVersion(db, owner.businessId, a.id), 2);
  });

  it('keeps one plan of each shared statement, however few ids it carries (PostgreSQL)', async (t) => {
    if (ctx().backend !== 'postgres') return t.diagnostic('SQLite plans a statement once, when it prepares it');
    const tenant = await ctx().createTenant();
    const order = await createOrder(ctx(), tenant, await createFixture(ctx(), tenant));
    // One connection: the plans asked about below are the ones its reads made.
    const handle = createDatabase(ctx().database.url, { schema: ctx().database.schema, poolSize: 1 });
    try {
      // One at a time, so each statement carries one id; PostgreSQL decides after its fifth run.
      for (let run = 0; run < 7; run++) {
        assert.equal(await readOrderVersion(handle.db, tenant.businessId, order.id), 1);
        assert.equal((await findOrderRow(handle.db, tenant.businessId, order.id))?.id, order.id);
        assert.equal((await loadOneOrderItems(handle.db, tenant.businessId, order.id)).length, order.orderItems.length);
      }
      const { rows } = await sql<{ statement: string; generic_plans: string }>`select statement, generic_plans
        from pg_prepared_statements where statement like '%= any(%' order by statement`.execute(handle.db);
      assert.equal(rows.length, 3, rows.map((r) => r.statement).join('\n'));
      for (const row of rows) assert.ok(Number(row.generic_plans) >= 2, `planned at each run: ${row.statement}`);
    } finally {
      await handle.close();
    }
  });

  it("is not failed by another request's id that the database refuses", async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const reads = [order.id, 'ord_\u0000x', order.id].map((id) =>
      readOrderVersion(ctx().db, t.businessId, id).then(
        (version) => ({ version }),
        () => 'refused',
      ),
    );
    const [first, odd, last] = await Promise.all(reads);
    assert.deepEqual([first, last], [{ version: 1 }, { version: 1 }]);
    // PostgreSQL refuses the NUL byte in text; SQLite finds no such order. Either way, alone.
    assert.deepEqual(odd, ctx().backend === 'postgres' ? 'refused' : { version: undefined });
  });

  it('reads alone on a database that routes each request to a replica of its choice', async (t) => {
    if (ctx().backend !== 'postgres') return t.diagnostic('replicas are PostgreSQL streaming replicas');
    const tenant = await ctx().createTenant();
    const order = await createOrder(ctx(), tenant, await createFixture(ctx(), tenant));
    const handle = createDatabase(ctx().database.url, {
      schema: ctx().database.schema,
      replicaUrls: [ctx().database.url],
    });
    try {
      const routed = handle.replicas!.db;
      assert.ok(routesPerRequest(routed) && !routesPerRequest(handle.db));
      const versions = await Promise.all([1, 2, 3].map(() => readOrderVersion(routed, tenant.businessId, order.id)));
      assert.deepEqual(versions, [1, 1, 1]);
    } finally {
      await handle.close();
    }
  });

  it('fails every check of a statement that failed, and reads again for the next', async () => {
    const t = await ctx().createTenant();
    const order = await createOrder(ctx(), t, await createFixture(ctx(), t));
    const { db, state } = counting();
    state.failing = true;
    const failed = await Promise.allSettled([1, 2, 3].map(() => readOrderVersion(db, t.businessId, order.id)));
    assert.deepEqual(
      failed.map((r) => r.status),
      ['rejected', 'rejected', 'rejected'],
    );
    state.failing = false;
    assert.equal(await readOrderVersion(db, t.businessId, order.id), 1);
  });
});
