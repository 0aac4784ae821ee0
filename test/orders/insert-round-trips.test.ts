import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import type { Database } from '../../src/db/types.ts';
import { newId } from '../../src/lib/ids.ts';
import { insertOrders, type NewOrder } from '../../src/orders/repository.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { createFixture, createOrder as createOrderByApi, DELIVERY } from '../helpers/orders.ts';
import { createOrder } from '../../src/orders/service.ts';
import type { CreateOrderInput } from '../../src/orders/schema.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';

/**
 * Orders are stored in few round trips on PostgreSQL (src/orders/repository.ts insertOrders,
 * decision 0053): the items' insert travels behind the orders' insert, and both are read after.
 */
describeEachBackend('inserting orders', (ctx) => {
  let own: DatabaseHandle | undefined;
  before(() => {
    if (ctx().backend === 'postgres') own = createDatabase(ctx().database.url, { schema: ctx().database.schema });
  });
  after(() => own?.close());

  /** Two copies of an order the API created, with new ids, each with its three items. */
  async function copies(numbered: boolean): Promise<NewOrder[]> {
    const t = await ctx().createTenant();
    const f = await createFixture(ctx(), t);
    const created = await createOrderByApi(ctx(), t, f);
    const order = await ctx()
      .db.selectFrom('orders')
      .selectAll()
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    const items = await ctx().db.selectFrom('order_items').selectAll().where('order_id', '=', created.id).execute();
    return [1, 2].map((n) => {
      const id = newId('ord');
      return {
        // Rows as read back, timestamps included, are rows as stored.
        order: { ...order, id, internal_reference: numbered ? '' : `COPY-${n}` } as NewOrder['order'],
        items: items.map((item) => ({ ...item, id: newId('oi'), order_id: id }) as NewOrder['items'][number]),
        numbered,
      };
    });
  }

  /** What `work` answers, and the round trips it took on PostgreSQL (0 on SQLite). */
  async function counted<T>(work: (db: Kysely<Database>) => Promise<T>): Promise<{ answer: T; used: number }> {
    const trips = () => own?.poolStats?.().roundTrips ?? 0;
    const start = trips();
    const answer = await work(own?.db ?? ctx().db);
    return { answer, used: trips() - start };
  }

  it('stores orders and their items with the items behind the orders, answering the rows as stored', async (t) => {
    const given = await copies(false);
    const { answer: stored, used } = await counted((db) => db.transaction().execute((trx) => insertOrders(trx, given)));
    assert.deepEqual(
      stored.map((s) => [s.order.id, s.order.internal_reference, s.items.map((i) => i.id).sort()]),
      given.map((g) => [g.order.id, g.order.internal_reference, g.items.map((i) => i.id).sort()]),
    );
    if (!own) return t.diagnostic('SQLite answers every statement as it runs');
    // BEGIN, the orders and their items; the read model's rows and the COMMIT.
    assert.equal(used, 2, `round trips: ${used}`);
  });

  it('takes the SO numbers first, then stores the orders as one more round trip', async (t) => {
    const given = await copies(true);
    const { answer: stored, used } = await counted((db) => db.transaction().execute((trx) => insertOrders(trx, given)));
    assert.deepEqual(
      stored.map((s) => s.order.internal_reference),
      ['SO-000002', 'SO-000003'],
    );
    if (!own) return t.diagnostic('SQLite answers every statement as it runs');
    assert.equal(used, 3, `round trips: ${used}`);
  });

  it("fails with the orders' own error when their insert fails, and keeps nothing", async () => {
    const given = await copies(false);
    given[1].order.partnership_id = 'pt_missing';
    const db = own?.db ?? ctx().db;
    await assert.rejects(
      db.transaction().execute((trx) => insertOrders(trx, given)),
      /foreign key/i,
    );
    const kept = await ctx()
      .db.selectFrom('orders')
      .select('id')
      .where(
        'id',
        'in',
        given.map((g) => g.order.id),
      )
      .execute();
    assert.deepEqual(kept, []);
  });
  it('a create takes its SO number as its prices are read: the lock, the prices and the number, the rows, the commit', async (t) => {
    const tenant = await ctx().createTenant();
    const f = await createFixture(ctx(), tenant);
    const partnership = { id: f.partnershipId, itemListId: null };
    const input = {
      expectedDeliveryAt: DELIVERY,
      orderItems: [0, 1, 2].map((i) => ({ itemVariantId: f.variantIds[i], quantity: 2 })),
    } as CreateOrderInput;
    const write = (db: Kysely<Database>) =>
      createWriteRunner(db).run({ businessId: tenant.businessId, actor: SYSTEM }, (c) =>
        createOrder(c, partnership, input),
      );
    await counted(write);
    const {
      answer: { resource },
      used,
    } = await counted(write);
    assert.equal(resource.internalReference, 'SO-000002');
    assert.equal(resource.orderItems.length, 3);
    if (!own) return t.diagnostic('SQLite answers every statement as it runs');
    assert.equal(used, 4, `round trips: ${used}`);
  });
});
