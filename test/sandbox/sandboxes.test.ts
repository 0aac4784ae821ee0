import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { describeTables } from '../../src/db/schema-tables.ts';
import type { ApiError } from '../../src/lib/errors.ts';
import { insertApiKey } from '../../src/businesses/repository.ts';
import { listSandboxes } from '../../src/sandbox/repository.ts';
import { findRun } from '../../src/sandbox/runs.ts';
import { createSandbox, deleteSandbox, resetSandbox } from '../../src/sandbox/service.ts';
import { runSimulation, startSimulation } from '../../src/sandbox/simulator.ts';
import { createWriteRunner, SYSTEM, type WriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { exported } from '../helpers/export.ts';
import { importNow } from '../helpers/imports.ts';
import {
  liveBusinessWithConfiguration,
  newSandbox,
  SECRET_KEY,
  sandboxSettings,
  withoutIdsAndTimes,
} from './helpers.ts';

async function configurationOf(ctx: TestContext, t: Tenant) {
  const lists = await ctx.request('GET', '/api/v1/pricing', { as: t });
  assert.equal(lists.status, 200, JSON.stringify(lists.body));
  const hooks = await ctx.request('GET', '/api/v1/webhook-endpoints', { as: t });
  assert.equal(hooks.status, 200, JSON.stringify(hooks.body));
  return {
    items: (await exported(ctx, t, 'items')).records,
    buyers: (await exported(ctx, t, 'buyers')).records,
    priceLists: lists.body.items,
    webhookUrls: hooks.body.items.map((h: { url: string }) => h.url),
  };
}

async function countRows(ctx: TestContext, table: string, businessId: string): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*) as n from ${sql.table(table)} where business_id = ${businessId}`.execute(ctx.db);
  return Number(rows[0].n);
}

const ITEM = { item: { name: 'Written meanwhile' }, variants: [{ variantName: 'One', currency: 'AUD', price: 1 }] };

/**
 * A write runner for a reset or delete that, after its `after`th write, has the sandbox's own key
 * create an item through the API, as an integration still writing would: what it answered is in `answers`.
 */
function interleaved(ctx: TestContext, sandbox: Tenant, after: number) {
  const inner = createWriteRunner(ctx.db);
  const answers: Array<{ status: number; body: any }> = [];
  let ran = 0;
  const writes: WriteRunner = {
    ...inner,
    run: async (scope, work) => {
      const result = await inner.run(scope, work);
      if (++ran === after) {
        answers.push(await ctx.request('POST', '/api/v1/items', { as: sandbox, body: ITEM }));
        // An import is received outside any write: it checks the same.
        answers.push(
          await ctx.request('POST', '/api/v1/imports', {
            as: sandbox,
            body: `${JSON.stringify({ op: 'create', resource: 'item', data: ITEM })}\n`,
            headers: { 'content-type': 'application/x-ndjson' },
          }),
        );
      }
      return result;
    },
  };
  return { writes, answers };
}

describeEachBackend(
  'sandbox create',
  (ctx) => {
    it('copies items, price lists, buyers and webhook endpoints exactly, but for ids and times, in batches', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const progress: Array<[string, number, number]> = [];
      const created = await newSandbox(ctx(), live, {
        progress: (table, done, total) => progress.push([table, done, total]),
      });
      assert.match(created.apiKey, /^sl_test_[0-9A-Za-z]{36}$/);
      assert.equal(created.sandbox.liveBusinessId, live.businessId);

      const [original, copy] = [await configurationOf(ctx(), live), await configurationOf(ctx(), created.tenant)];
      assert.ok(original.items.length >= 1 && original.buyers.length >= 2 && original.priceLists.length >= 2);
      assert.deepEqual(withoutIdsAndTimes(copy), withoutIdsAndTimes(original));
      // Batches of 2: the three variants were written in two writes, each reported.
      assert.deepEqual(
        progress.filter(([table]) => table === 'item_variants'),
        [
          ['item_variants', 0, 3],
          ['item_variants', 2, 3],
          ['item_variants', 3, 3],
        ],
      );
    });

    it("lets the event loop turn between batches, so a server's other requests wait for one batch at most", async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      // A chain of immediates that counts the event loop's turns while the copy runs.
      let turns = 0;
      let counting = true;
      const count = () => {
        turns++;
        if (counting) setImmediate(count);
      };
      setImmediate(count);
      const seen: number[] = [];
      try {
        await newSandbox(ctx(), live, { progress: (_table, done) => done > 0 && seen.push(turns) });
      } finally {
        counting = false;
      }
      assert.ok(seen.length >= 3, JSON.stringify(seen));
      // Each batch after the first began on a later turn than the one before it.
      assert.ok(
        seen.every((t, i) => i === 0 || t > seen[i - 1]),
        JSON.stringify(seen),
      );
    });

    it('never copies orders, invoices, keys, users, events or secrets; its webhook endpoints wait disabled', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const { tenant: sandbox } = await newSandbox(ctx(), live);
      for (const table of ['orders', 'order_items', 'invoices', 'users', 'events', 'idempotency_keys'])
        assert.equal(await countRows(ctx(), table, sandbox.businessId), 0, table);
      assert.equal(await countRows(ctx(), 'api_keys', sandbox.businessId), 1);
      const hooks = await ctx()
        .db.selectFrom('webhook_endpoints')
        .selectAll()
        .where('business_id', 'in', [live.businessId, sandbox.businessId])
        .execute();
      const [original, copy] = [live.businessId, sandbox.businessId].map(
        (b) => hooks.find((h) => h.business_id === b)!,
      );
      assert.equal(original.status, 'enabled');
      assert.equal(copy.status, 'disabled');
      assert.notEqual(copy.secret, original.secret);
      assert.equal(Number(copy.cursor_sequence), 0);
      const order = await ctx().request('GET', '/api/v1/orders', { as: sandbox });
      assert.equal(order.status, 200);
      assert.deepEqual(order.body.items, []);
    });

    it('leaves a sandbox whose copy was cut short closed to writes, saying so, until it is reset', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const inner = createWriteRunner(ctx().db);
      let ran = 0;
      // The process dies during the copy: its fourth write never happens.
      const dying: WriteRunner = {
        ...inner,
        run: async (scope, work) => {
          if (++ran === 4) throw new Error('killed');
          return inner.run(scope, work);
        },
      };
      let made = '';
      await assert.rejects(
        createSandbox(ctx().db, live.businessId, 'Cut short', {
          ...sandboxSettings(ctx(), { writes: dying }),
          onMade: (id) => {
            made = id;
          },
        }),
        /killed/,
      );
      const reason = `Sandbox ${made} is being created: if its copy was interrupted, reset the sandbox to copy again, or delete it`;
      const [listed] = await listSandboxes(ctx().db, live.businessId);
      assert.deepEqual([listed.id, listed.closed], [made, reason]);
      const key = await createWriteRunner(ctx().db).run({ businessId: made, actor: SYSTEM, whileClosed: true }, (c) =>
        insertApiKey(c.trx, made, c.now, { name: 'Later key', createdBy: SYSTEM }),
      );
      const sandbox = {
        businessId: made,
        apiKey: key.apiKey,
        keyId: '',
        headers: { 'x-business-id': made, 'x-api-key': key.apiKey },
      };
      const refused = await ctx().request('POST', '/api/v1/items', { as: sandbox, body: ITEM });
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.error, reason);

      await resetSandbox(ctx().db, made, sandboxSettings(ctx()));
      assert.equal((await listSandboxes(ctx().db, live.businessId))[0].closed, null);
      assert.equal((await ctx().request('POST', '/api/v1/items', { as: sandbox, body: ITEM })).status, 201);
      // A sandbox made in one go is ready at once.
      const { sandbox: whole } = await newSandbox(ctx(), live);
      assert.equal(whole.closed, null);
    });

    it('refuses a sandbox of a sandbox, an unknown business, and more than the setting allows', async () => {
      const live = await ctx().createTenant();
      const first = await newSandbox(ctx(), live, { maxSandboxes: 2 });
      await newSandbox(ctx(), live, { maxSandboxes: 2 });
      await assert.rejects(newSandbox(ctx(), live, { maxSandboxes: 2 }), (e: ApiError) => {
        assert.equal(e.code, 'CONFLICT');
        assert.match(e.message, /2 sandboxes, the most it may have \(SANDBOXES_PER_BUSINESS=2\)/);
        return true;
      });
      await assert.rejects(newSandbox(ctx(), first.tenant), /is a sandbox; a sandbox is made from a live business/);
      await assert.rejects(
        createSandbox(ctx().db, 'bus_00000000000000000000000000', undefined, sandboxSettings(ctx())),
        /not found/,
      );
      assert.deepEqual(
        (await listSandboxes(ctx().db, live.businessId)).map((s) => s.name),
        ['Test Supplier (sandbox)', 'Test Supplier (sandbox)'],
      );
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);

describeEachBackend(
  'sandbox reset',
  (ctx) => {
    it('empties the sandbox and copies the live configuration again; its keys keep working and its sequence goes on', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const { tenant: sandbox } = await newSandbox(ctx(), live);
      const before = await configurationOf(ctx(), sandbox);
      const buyers = await ctx().request('GET', '/api/v1/buyers', { as: sandbox });
      const buyerId = buyers.body.items[0].id;
      const item = await ctx().request('POST', '/api/v1/items', {
        as: sandbox,
        body: { item: { name: 'Sandbox only' }, variants: [{ variantName: 'One', currency: 'AUD', price: 3 }] },
      });
      assert.equal(item.status, 201);
      const order = await ctx().request('POST', `/api/v1/buyers/${buyerId}/orders`, {
        as: sandbox,
        body: {
          expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
          orderItems: [{ itemVariantId: item.body.variantIds[0], quantity: 1 }],
        },
      });
      assert.equal(order.status, 201, JSON.stringify(order.body));
      const feed = await ctx().request('GET', '/api/v1/events', { as: sandbox });
      const lastSequence = feed.body.lastSequence;
      assert.ok(lastSequence >= 2);

      await resetSandbox(ctx().db, sandbox.businessId, sandboxSettings(ctx()));
      assert.deepEqual(withoutIdsAndTimes(await configurationOf(ctx(), sandbox)), withoutIdsAndTimes(before));
      assert.equal(await countRows(ctx(), 'orders', sandbox.businessId), 0);
      // Its events are gone, and none follows yet: the 410 names no event that does not exist.
      const gone = await ctx().request('GET', '/api/v1/events?after=0', { as: sandbox });
      assert.equal(gone.status, 410, JSON.stringify(gone.body));
      assert.equal(
        gone.body.message,
        `Events up to ${lastSequence} are no longer retained, and none after it yet; the next is ${lastSequence + 1}`,
      );
      const created = await ctx().request('POST', '/api/v1/buyers', {
        as: sandbox,
        body: { buyer: { name: 'After reset' } },
      });
      assert.equal(created.status, 201);
      const after = await ctx().request('GET', `/api/v1/events?after=${lastSequence}`, { as: sandbox });
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.ok(after.body.items.length > 0 && after.body.items[0].sequence > lastSequence);
    });

    it('refuses the writes that arrive while it runs with a 409, and takes them again once it is done', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const { tenant: sandbox } = await newSandbox(ctx(), live);
      const { writes, answers } = interleaved(ctx(), sandbox, 3);
      await resetSandbox(ctx().db, sandbox.businessId, sandboxSettings(ctx(), { writes }));
      assert.equal(answers.length, 2);
      for (const answer of answers) {
        assert.equal(answer.status, 409, JSON.stringify(answer.body));
        assert.equal(
          answer.body.error,
          `Sandbox ${sandbox.businessId} is being reset: try again once the reset is done`,
        );
      }
      assert.equal(
        await countRows(ctx(), 'items', sandbox.businessId),
        (await countRows(ctx(), 'items', live.businessId)) - 1,
      );
      const after = await ctx().request('POST', '/api/v1/items', { as: sandbox, body: ITEM });
      assert.equal(after.status, 201, JSON.stringify(after.body));
    });

    it('refuses a live business', async () => {
      const live = await ctx().createTenant();
      await assert.rejects(resetSandbox(ctx().db, live.businessId, sandboxSettings(ctx())), /is live, not a sandbox/);
      await assert.rejects(deleteSandbox(ctx().db, live.businessId, sandboxSettings(ctx())), /is live, not a sandbox/);
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);

describeEachBackend(
  'sandbox delete',
  (ctx) => {
    it('leaves no row of the sandbox in any table, and the live business as it was', async () => {
      const tables = await describeTables(ctx().db);
      // A table without business_id holds a business's rows through a parent: named here, so a new one fails this test.
      const parents: Record<string, [string, string]> = {
        import_chunks: ['import_id', 'imports'],
        import_results: ['import_id', 'imports'],
        webhook_attempts: ['delivery_id', 'webhook_deliveries'],
      };
      const shared = ['instances', 'kysely_migration', 'kysely_migration_lock', 'businesses'];
      assert.deepEqual(
        tables.filter((t) => !t.columns.includes('business_id') && !shared.includes(t.name)).map((t) => t.name),
        Object.keys(parents),
      );
      const throughParent = async (table: string, businessId: string | null) => {
        const [column, parent] = parents[table];
        const owned = businessId === null ? sql`` : sql` where business_id = ${businessId}`;
        const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}
          where ${sql.ref(column)} ${businessId === null ? sql`not ` : sql``}in (select id from ${sql.table(parent)}${owned})`.execute(
          ctx().db,
        );
        return Number(rows[0].n);
      };
      const { live } = await liveBusinessWithConfiguration(ctx());
      const liveBefore = await configurationOf(ctx(), live);
      const { tenant: sandbox } = await newSandbox(ctx(), live);

      // Some of everything a sandbox can hold: orders, imports, webhook deliveries, idempotent writes, audit rows.
      const buyers = await ctx().request('GET', '/api/v1/buyers', { as: sandbox });
      const items = await ctx().request('GET', '/api/v1/items', { as: sandbox });
      const order = await ctx().request('POST', `/api/v1/buyers/${buyers.body.items[0].id}/orders`, {
        as: sandbox,
        headers: { 'idempotency-key': 'sandbox-order-1' },
        body: {
          expectedDeliveryAt: '2030-01-15T10:30:00.000Z',
          orderItems: [{ itemVariantId: items.body.items[0].variants[0].id, quantity: 1 }],
          properties: { erp: { no: 'S-1' } },
        },
      });
      assert.equal(order.status, 201, JSON.stringify(order.body));
      await importNow(ctx(), sandbox, [{ op: 'create', resource: 'buyer', data: { buyer: { name: 'Imported' } } }]);
      const hooks = await ctx().request('GET', '/api/v1/webhook-endpoints', { as: sandbox });
      const enabled = await ctx().request('PATCH', `/api/v1/webhook-endpoints/${hooks.body.items[0].id}`, {
        as: sandbox,
        body: { status: 'enabled' },
      });
      assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
      await ctx().request('POST', `/api/v1/webhook-endpoints/${hooks.body.items[0].id}/test`, { as: sandbox });
      await ctx().request('GET', '/api/v1/orders', {
        as: { ...sandbox, headers: { ...sandbox.headers, 'x-api-key': 'sl_test_wrong' } },
      });

      // A simulation still running when the delete begins: it is stopped, and its rows go too.
      const running = await startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
        ordersPerMinute: 1,
        actor: SYSTEM,
        now: Date.now(),
      });
      await runSimulation(ctx().db, sandbox.businessId, {
        writes: createWriteRunner(ctx().db),
        ordersPerMinute: 6000,
        minutes: 2 / 6000,
      });

      assert.ok((await throughParent('import_results', sandbox.businessId)) > 0);
      await deleteSandbox(ctx().db, sandbox.businessId, sandboxSettings(ctx()));
      // But for its write clock, kept closed: a write sent with its key, still cached for a moment, is refused.
      for (const table of tables.filter((t) => t.name !== 'write_clocks'))
        for (const column of table.columns) {
          const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(table.name)}
            where cast(${sql.ref(column)} as text) like ${`%${sandbox.businessId}%`}`.execute(ctx().db);
          assert.equal(Number(rows[0].n), 0, `${table.name}.${column} still names the sandbox`);
        }
      // Rows that name their business only through a parent (import chunks, delivery attempts) are gone with it.
      for (const table of Object.keys(parents)) assert.equal(await throughParent(table, null), 0, table);
      assert.deepEqual(await configurationOf(ctx(), live), liveBefore);
      assert.equal((await ctx().request('GET', '/api/v1/orders', { as: live })).body.items.length, 1);
      assert.equal(await findRun(ctx().db, sandbox.businessId, running.id), undefined);
    });

    it('refuses the writes that arrive while it runs, and after it, with a 409, and leaves nothing half-deleted', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const { tenant: sandbox } = await newSandbox(ctx(), live);
      // Its key is in this instance's cache of keys, as an integration's is while it writes.
      assert.equal((await ctx().request('GET', '/api/v1/items', { as: sandbox })).status, 200);
      const { writes, answers } = interleaved(ctx(), sandbox, 3);
      await deleteSandbox(ctx().db, sandbox.businessId, sandboxSettings(ctx(), { writes }));
      for (const answer of answers) {
        assert.equal(answer.status, 409, JSON.stringify(answer.body));
        assert.equal(answer.body.error, `Sandbox ${sandbox.businessId} is deleted`);
      }
      for (const table of ['items', 'events', 'api_keys'])
        assert.equal(await countRows(ctx(), table, sandbox.businessId), 0, table);
      const business = await sql`select id from businesses where id = ${sandbox.businessId}`.execute(ctx().db);
      assert.equal(business.rows.length, 0);
      // Its key, still in this instance's cache of keys for a moment: refused, not half-made.
      const late = await ctx().request('POST', '/api/v1/items', { as: sandbox, body: ITEM });
      assert.ok([401, 409].includes(late.status), JSON.stringify(late.body));
      assert.equal(await countRows(ctx(), 'items', sandbox.businessId), 0);
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);
