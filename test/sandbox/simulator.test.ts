import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createRandom } from '../../src/demo/random.ts';
import type { ApiError } from '../../src/lib/errors.ts';
import { endRun, findRun } from '../../src/sandbox/runs.ts';
import { runSimulation, startSimulation, type SimulatedChange } from '../../src/sandbox/simulator.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { liveBusinessWithConfiguration, SECRET_KEY } from './helpers.ts';

const noWait = async () => {};

describeEachBackend(
  'sandbox simulate',
  (ctx) => {
    it('keeps orders coming at the rate asked, some later changed or cancelled by the buyer, all in the sandbox', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const liveSequence = (await ctx().request('GET', '/api/v1/events', { as: live })).body.lastSequence;
      const changes: SimulatedChange[] = [];
      const waits: number[] = [];
      let now = Date.parse('2030-01-01T00:00:00Z');
      const counts = await runSimulation(ctx().db, sandbox.businessId, {
        writes: createWriteRunner(ctx().db),
        ordersPerMinute: 60,
        minutes: 0.5,
        random: createRandom(66).next,
        clock: () => now,
        sleep: async (ms) => {
          waits.push(ms);
          now += ms;
        },
        onChange: (change) => changes.push(change),
      });
      assert.equal(counts.created, 30);
      // The seed decides which orders the buyer changes and cancels, whichever buyers and items the
      // database picked for each order (each order and change draws as many numbers): the same on
      // every run and both backends.
      assert.deepEqual({ changed: counts.changed, cancelled: counts.cancelled }, { changed: 7, cancelled: 2 });
      assert.equal(changes.length, counts.created + counts.changed + counts.cancelled);
      // One wait between two orders, each at most the interval (a second at 60 a minute).
      assert.equal(waits.length, 29);
      assert.ok(
        waits.every((ms) => ms >= 0 && ms <= 1000),
        JSON.stringify(waits),
      );

      const orders = await ctx().request('GET', '/api/v1/orders?limit=100', { as: sandbox });
      assert.equal(orders.body.total, 30);
      const cancelled = orders.body.items.filter((o: { phase: string }) => o.phase === 'CANCELLED');
      assert.equal(cancelled.length, counts.cancelled);
      assert.equal(
        orders.body.items.filter((o: { notes: string }) => o.notes === 'Changed by the buyer').length,
        counts.changed,
      );

      const feed = (await ctx().request('GET', '/api/v1/events?limit=1000', { as: sandbox })).body.items;
      const ofOrders = feed.filter((e: { resourceType: string }) => e.resourceType === 'order');
      assert.equal(ofOrders.filter((e: { type: string }) => e.type === 'order.created').length, 30);
      assert.equal(
        ofOrders.filter((e: { type: string }) => e.type === 'order.updated').length,
        counts.changed + counts.cancelled,
      );
      assert.ok(
        ofOrders.every(
          (e: { livemode: boolean; actor: { id: string } }) => !e.livemode && e.actor.id === 'simulated-buyer',
        ),
      );
      assert.equal((await ctx().request('GET', '/api/v1/events', { as: live })).body.lastSequence, liveSequence);
    });

    it('receives an order the integration acknowledged and shipped in full (deliveredAt), and no other', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const created: Array<{ id: string; orderItems: Array<{ id: string; quantity: number }> }> = [];
      const fulfilled = new Set<string>();
      const counts = await runSimulation(ctx().db, sandbox.businessId, {
        writes: createWriteRunner(ctx().db),
        ordersPerMinute: 60,
        minutes: 0.1,
        // No second thoughts: every random draw is high.
        random: () => 0.99,
        sleep: async () => {
          // The integration acknowledges and ships every other order, all of it.
          const order = created.at(-1)!;
          if (created.length % 2 === 0) return;
          const ack = await ctx().request('POST', `/api/v1/orders/${order.id}/acknowledgements`, {
            as: sandbox,
            body: {},
          });
          assert.equal(ack.status, 201, JSON.stringify(ack.body));
          const lines = order.orderItems.map((i) => ({ orderItemId: i.id, quantity: i.quantity }));
          const shipped = await ctx().request('POST', `/api/v1/orders/${order.id}/shipments`, {
            as: sandbox,
            body: { lines },
          });
          assert.equal(shipped.status, 201, JSON.stringify(shipped.body));
          fulfilled.add(order.id);
        },
        onChange: ({ kind, order }) => {
          if (kind === 'created') created.push(order);
        },
      });
      assert.equal(counts.created, 6);
      assert.equal(counts.received, 3);
      const orders = (await ctx().request('GET', '/api/v1/orders?limit=100', { as: sandbox })).body.items;
      for (const order of orders) {
        const received = order.deliveredAt !== null;
        assert.equal(received, fulfilled.has(order.id), JSON.stringify(order));
        if (received) assert.equal(order.status, 'DELIVERED');
      }
    });

    it('stops when asked, and refuses a live business', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const stop = new AbortController();
      const counts = await runSimulation(ctx().db, sandbox.businessId, {
        writes: createWriteRunner(ctx().db),
        ordersPerMinute: 600,
        signal: stop.signal,
        sleep: noWait,
        onChange: ({ kind }) => {
          if (kind === 'created') stop.abort();
        },
      });
      assert.equal(counts.created, 1);
      await assert.rejects(
        runSimulation(ctx().db, live.businessId, {
          writes: createWriteRunner(ctx().db),
          ordersPerMinute: 1,
          sleep: noWait,
        }),
        /is live, not a sandbox/,
      );
    });

    it('refuses a rate below an order every 100 minutes, whose wait could not be stored, on both backends', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      for (const ordersPerMinute of [0.00001, 1e-300, 0])
        await assert.rejects(
          startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
            ordersPerMinute,
            actor: SYSTEM,
            now: Date.now(),
          }),
          (error: ApiError) =>
            error.fieldErrors?.ordersPerMinute === 'Must be a number from 0.01 (an order every 100 minutes) to 6000',
        );
      const slowest = await startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
        ordersPerMinute: 0.01,
        actor: SYSTEM,
        now: Date.now(),
      });
      assert.equal((await findRun(ctx().db, sandbox.businessId, slowest.id))?.ordersPerMinute, 0.01);
    });

    it('runs at most 3 simulations of one sandbox at once: a fourth is a 409 until one stops', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const start = () =>
        startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
          ordersPerMinute: 1,
          actor: SYSTEM,
          now: Date.now(),
        });
      const runs = [await start(), await start(), await start()];
      await assert.rejects(
        start(),
        (error: ApiError) =>
          error.code === 'CONFLICT' &&
          error.message ===
            `Sandbox ${sandbox.businessId} has 3 simulations running, the most it may have: stop one first`,
      );
      assert.equal(await endRun(ctx().db, sandbox.businessId, runs[0].id, new Date().toISOString()), true);
      assert.equal((await start()).state, 'RUNNING');
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);
