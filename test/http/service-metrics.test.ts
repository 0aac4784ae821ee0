import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { ENTRY_OVERHEAD } from '../../src/lib/render-cache.ts';
import { describeEachBackend, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder } from '../helpers/orders.ts';
import { startReceiver } from '../helpers/receiver.ts';

/** One sample of /metrics: the value of `name{labels}` (exactly as written), or undefined. */
async function sample(ctx: TestContext, series: string): Promise<number | undefined> {
  const res = await ctx.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  const line = res.body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const item = (name: string) => ({ item: { name }, variants: [{ variantName: 'One', currency: 'AUD', price: 1 }] });

/**
 * The backlog metrics an operator alerts on (issue 50, docs/operations.md): feed long polls waiting,
 * writes waiting for a business's lock, import lines by outcome, webhook deliveries by outcome and
 * each endpoint's oldest undelivered delivery.
 */
describeEachBackend(
  'service metrics',
  (ctx) => {
    it('counts feed long polls waiting on this instance', async () => {
      const t = await ctx().createTenant();
      const last = (await ctx().request('GET', '/api/v1/events?after=0&limit=1000', { as: t })).body.lastSequence;
      assert.equal(await sample(ctx(), 'supplyline_feed_long_polls_waiting'), 0);
      const polls = [1, 2].map(() => ctx().request('GET', `/api/v1/events?after=${last}&wait=10`, { as: t }));
      await eventually(
        () => sample(ctx(), 'supplyline_feed_long_polls_waiting'),
        (n) => n === 2,
      );
      await ctx().request('POST', '/api/v1/items', { as: t, body: item('Wakes them') });
      for (const poll of await Promise.all(polls)) assert.equal(poll.body.items[0].type, 'item.created');
      assert.equal(await sample(ctx(), 'supplyline_feed_long_polls_waiting'), 0);
    });

    it("times every write's wait for its business's lock, and counts the writes waiting for it (PostgreSQL: another session holds it)", async () => {
      const t = await ctx().createTenant();
      const before = (await sample(ctx(), 'supplyline_write_lock_wait_seconds_count')) ?? 0;
      assert.equal((await ctx().request('POST', '/api/v1/items', { as: t, body: item('Timed') })).status, 201);
      assert.equal(await sample(ctx(), 'supplyline_write_lock_wait_seconds_count'), before + 1);
      if (ctx().backend !== 'postgres') return;
      const holder = new pg.Client({
        connectionString: ctx().database.url,
        options: `-c search_path=${ctx().database.schema}`,
      });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('select 1 from write_clocks where business_id = $1 for update', [t.businessId]);
        const blocked = ctx().request('POST', '/api/v1/items', { as: t, body: item('Waits') });
        await eventually(
          () => sample(ctx(), 'supplyline_write_lock_waiting'),
          (n) => n === 1,
        );
        await holder.query('commit');
        assert.equal((await blocked).status, 201);
        assert.equal(await sample(ctx(), 'supplyline_write_lock_waiting'), 0);
      } finally {
        await holder.end();
      }
    });

    it("shows the response cache's bytes and entries", async () => {
      const t = await ctx().createTenant();
      const f = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, f);
      const bytes = (await sample(ctx(), 'supplyline_response_cache_bytes')) ?? 0;
      const entries = (await sample(ctx(), 'supplyline_response_cache_entries')) ?? 0;
      const read = await ctx().app.inject({ method: 'GET', url: `/api/v1/orders/${order.id}`, headers: t.headers });
      assert.equal(read.statusCode, 200);
      assert.equal(await sample(ctx(), 'supplyline_response_cache_entries'), entries + 1);
      // The JSON, its key (business/order) and the cache's estimate of an entry's overhead.
      const key = `${t.businessId}/${order.id}`;
      assert.equal(
        await sample(ctx(), 'supplyline_response_cache_bytes'),
        bytes + Buffer.byteLength(read.body) + key.length + ENTRY_OVERHEAD,
      );
    });

    it('counts import lines by outcome once their batch commits', async () => {
      const t = await ctx().createTenant();
      const lines = [
        { op: 'create', resource: 'item', ref: 'a', data: item('Imported') },
        { op: 'create', resource: 'item', ref: 'a', data: item('Twice') },
        { op: 'patch', resource: 'item', id: { $ref: 'a' }, data: { name: 'Imported' } },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n');
      const created = (await sample(ctx(), 'supplyline_import_lines_total{outcome="created"}')) ?? 0;
      const posted = await ctx().request('POST', '/api/v1/imports', {
        as: t,
        body: lines,
        headers: { 'content-type': 'application/x-ndjson' },
      });
      assert.equal(posted.status, 202);
      await eventually(
        async () => (await ctx().request('GET', `/api/v1/imports/${posted.body.id}`, { as: t })).body.state,
        (s) => s === 'COMPLETED',
      );
      assert.equal(await sample(ctx(), 'supplyline_import_lines_total{outcome="created"}'), created + 1);
      assert.ok((await sample(ctx(), 'supplyline_import_lines_total{outcome="failed"}'))! >= 1);
      assert.ok((await sample(ctx(), 'supplyline_import_lines_total{outcome="unchanged"}'))! >= 1);
    });

    it("shows each endpoint's oldest undelivered delivery while it waits, and counts deliveries by how they ended", async () => {
      const t = await ctx().createTenant();
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const receiver = await startReceiver(async (_r, res) => {
        await held;
        res.writeHead(200).end('ok');
      });
      try {
        const endpoint = await ctx().request('POST', '/api/v1/webhook-endpoints', {
          as: t,
          body: { url: receiver.url, eventTypes: ['item.created'] },
        });
        assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
        const succeeded = (await sample(ctx(), 'supplyline_webhook_deliveries_total{outcome="succeeded"}')) ?? 0;
        await ctx().request('POST', '/api/v1/items', { as: t, body: item('Delivered') });
        const series = `supplyline_webhook_oldest_undelivered_seconds{endpoint="${endpoint.body.id}"}`;
        assert.ok(
          (await eventually(
            () => sample(ctx(), series),
            (age) => age !== undefined,
          ))! >= 0,
        );
        release();
        await eventually(
          () => sample(ctx(), 'supplyline_webhook_deliveries_total{outcome="succeeded"}'),
          (n) => n === succeeded + 1,
        );
        await eventually(
          () => sample(ctx(), series),
          (age) => age === undefined,
        );
      } finally {
        release();
        await receiver.close();
      }
    });
  },
  { config: { webhooks: { ...loadConfig({}).webhooks, allowPrivateNetworks: true, timeoutMs: 5000 } } },
);
