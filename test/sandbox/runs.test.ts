import assert from 'node:assert/strict';
import { setTimeout as wait } from 'node:timers/promises';
import { it } from 'node:test';
import { listFindings } from '../../src/sandbox/findings.ts';
import { endRun, findRun, type SimulationRun } from '../../src/sandbox/runs.ts';
import { runSimulation, startSimulation } from '../../src/sandbox/simulator.ts';
import { createSimulationWorker } from '../../src/sandbox/worker.ts';
import { createWriteRunner, SYSTEM, type WriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { liveBusinessWithConfiguration, SECRET_KEY } from './helpers.ts';

const quiet = { warn: () => {} };

/** A worker as an instance runs it, looking for runs every 20 ms. */
const worker = (ctx: TestContext) =>
  createSimulationWorker({ db: ctx.db, writes: createWriteRunner(ctx.db), clock: Date.now, log: quiet, pollMs: 20 });

async function until(ctx: TestContext, sandbox: Tenant, id: string, done: (run: SimulationRun) => boolean) {
  for (let tries = 0; tries < 1000; tries++) {
    const run = (await findRun(ctx.db, sandbox.businessId, id))!;
    if (done(run)) return run;
    await wait(20);
  }
  throw new Error(`simulation ${id} did not get there`);
}

/** How many orders the run made: every order of the sandbox is one its runs recorded, each once. */
async function ordersOf(ctx: TestContext, sandbox: Tenant, runId: string) {
  const orders = await ctx.db.selectFrom('orders').select('id').where('business_id', '=', sandbox.businessId).execute();
  const recorded = await ctx.db
    .selectFrom('simulation_orders')
    .select(['order_id', 'run_id'])
    .where('business_id', '=', sandbox.businessId)
    .execute();
  assert.deepEqual(recorded.map((r) => r.order_id).sort(), orders.map((o) => o.id).sort());
  return recorded.filter((r) => r.run_id === runId).length;
}

describeEachBackend(
  'simulation runs',
  (ctx) => {
    it('runs a simulation started without a driver on one of two instances, to exactly its orders, and stops one when asked', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const writes = createWriteRunner(ctx().db);
      const instances = [worker(ctx()), worker(ctx())];
      for (const w of instances) w.start();
      try {
        // 6,000 a minute for 0.005 minutes: 30 orders, one each 10 ms.
        const run = await startSimulation(ctx().db, writes, sandbox.businessId, {
          ordersPerMinute: 6000,
          minutes: 0.005,
          actor: SYSTEM,
          now: Date.now(),
        });
        assert.equal(run.total, 30);
        const finished = await until(ctx(), sandbox, run.id, (r) => r.state !== 'RUNNING');
        assert.equal(finished.state, 'FINISHED');
        assert.equal(finished.counts.created, 30);
        assert.equal(finished.pending.length, 0);
        assert.equal(await ordersOf(ctx(), sandbox, run.id), 30);
        const orders = (await ctx().request('GET', '/api/v1/orders?limit=100', { as: sandbox })).body.items;
        assert.equal(
          orders.filter((o: { phase: string }) => o.phase === 'CANCELLED').length,
          finished.counts.cancelled,
        );

        // Until stopped: it stops when asked, and its count is what it made.
        const endless = await startSimulation(ctx().db, writes, sandbox.businessId, {
          ordersPerMinute: 1200,
          actor: SYSTEM,
          now: Date.now(),
        });
        await until(ctx(), sandbox, endless.id, (r) => r.counts.created >= 3);
        assert.equal(await endRun(ctx().db, sandbox.businessId, endless.id, new Date().toISOString()), true);
        await wait(200);
        const stopped = (await findRun(ctx().db, sandbox.businessId, endless.id))!;
        assert.equal(stopped.state, 'STOPPED');
        assert.equal(await ordersOf(ctx(), sandbox, endless.id), stopped.counts.created);
      } finally {
        await Promise.all(instances.map((w) => w.stop()));
      }
    });

    it('after a step fails unexpectedly, waits for its lease to pass before any instance tries it again', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const inner = createWriteRunner(ctx().db);
      let steps = 0;
      // Every step of the run fails with something that is no client's error.
      const failing: WriteRunner = {
        ...inner,
        run: async (scope, work) => {
          if (scope.businessId === sandbox.businessId) {
            steps++;
            throw new Error('not a client error');
          }
          return inner.run(scope, work);
        },
      };
      const warnings: string[] = [];
      const instance = createSimulationWorker({
        db: ctx().db,
        writes: failing,
        clock: Date.now,
        log: { warn: (_details, message) => warnings.push(message) },
        pollMs: 20,
        leaseMs: 60_000,
      });
      const run = await startSimulation(ctx().db, inner, sandbox.businessId, {
        ordersPerMinute: 6000,
        actor: SYSTEM,
        now: Date.now(),
      });
      instance.start();
      try {
        await until(ctx(), sandbox, run.id, () => steps > 0);
        // Polled every 20 ms for half a second: tried once, not 25 times.
        await wait(500);
        assert.equal(steps, 1);
        assert.equal(warnings.length, 1, JSON.stringify(warnings));
        assert.equal((await findRun(ctx().db, sandbox.businessId, run.id))!.state, 'RUNNING');
      } finally {
        await instance.stop();
      }
    });

    it('goes on on another instance when the one driving it stops, making each order once', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const first = worker(ctx());
      first.start();
      const run = await startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
        ordersPerMinute: 3000,
        minutes: 0.01,
        actor: SYSTEM,
        now: Date.now(),
      });
      await until(ctx(), sandbox, run.id, (r) => r.counts.created >= 5);
      await first.stop();
      const second = worker(ctx());
      second.start();
      try {
        const finished = await until(ctx(), sandbox, run.id, (r) => r.state !== 'RUNNING');
        assert.equal(finished.state, 'FINISHED');
        assert.equal(finished.counts.created, 30);
        assert.equal(await ordersOf(ctx(), sandbox, run.id), 30);
      } finally {
        await second.stop();
      }
    });

    it('ends a run FAILED, with why, when its sandbox has nothing to order', async () => {
      const live = await ctx().createTenant('Empty Supplier');
      const sandbox = await ctx().createSandbox(live);
      const w = worker(ctx());
      w.start();
      try {
        const run = await startSimulation(ctx().db, createWriteRunner(ctx().db), sandbox.businessId, {
          ordersPerMinute: 60,
          actor: SYSTEM,
          now: Date.now(),
        });
        const failed = await until(ctx(), sandbox, run.id, (r) => r.state !== 'RUNNING');
        assert.equal(failed.state, 'FAILED');
        assert.match(failed.error!, /no live buyer/);
      } finally {
        await w.stop();
      }
    });

    it('finds over-shipped orders and orders not acknowledged in time, exactly, and forgets what is put right', async () => {
      const { live } = await liveBusinessWithConfiguration(ctx());
      const sandbox = await ctx().createSandbox(live);
      const made: Array<{ id: string; orderItems: Array<{ id: string; quantity: number }> }> = [];
      await runSimulation(ctx().db, sandbox.businessId, {
        writes: createWriteRunner(ctx().db),
        ordersPerMinute: 6000,
        minutes: 4 / 6000,
        // No second thoughts: every random draw is high.
        random: () => 0.99,
        sleep: async () => {},
        onChange: ({ kind, order }) => {
          if (kind === 'created') made.push(order);
        },
      });
      assert.equal(made.length, 4);
      const [lowered, cancelled, partly, silent] = made;
      const send = async (method: string, path: string, body: object, status: number) => {
        const res = await ctx().request(method, path, { as: sandbox, body });
        assert.equal(res.status, status, JSON.stringify(res.body));
        return res.body;
      };
      const shipAll = (order: (typeof made)[number]) =>
        send(
          'POST',
          `/api/v1/orders/${order.id}/shipments`,
          { lines: order.orderItems.map((i) => ({ orderItemId: i.id, quantity: i.quantity })) },
          201,
        );
      for (const order of [lowered, cancelled, partly])
        await send('POST', `/api/v1/orders/${order.id}/acknowledgements`, {}, 201);
      const shipment = await shipAll(lowered);
      await shipAll(cancelled);
      const first = partly.orderItems[0];
      await send(
        'POST',
        `/api/v1/orders/${partly.id}/shipments`,
        { lines: [{ orderItemId: first.id, quantity: first.quantity - 1 }] },
        201,
      );
      // The buyer lowers a shipped line, and cancels a shipped order; the API lets it (0058).
      const line = lowered.orderItems[0];
      await send(
        'PATCH',
        `/api/v1/orders/${lowered.id}`,
        { updateOrderItems: [{ id: line.id, quantity: line.quantity - 1 }] },
        200,
      );
      await send('PATCH', `/api/v1/orders/${cancelled.id}`, { order: { phase: 'CANCELLED' } }, 200);

      const times = await ctx()
        .db.selectFrom('orders')
        .select(['id', 'created_at'])
        .where('business_id', '=', sandbox.businessId)
        .execute();
      const acks = await ctx()
        .db.selectFrom('acknowledgements')
        .select(['order_id', 'created_at'])
        .where('business_id', '=', sandbox.businessId)
        .execute();
      const at = (value: unknown) => new Date(value as string).getTime();
      const madeAt = new Map(times.map((t) => [t.id, at(t.created_at)]));
      const slowest = Math.max(...acks.map((a) => at(a.created_at) - madeAt.get(a.order_id)!));
      const now = Math.max(...madeAt.values()) + slowest + 1;
      const kinds = (found: Awaited<ReturnType<typeof listFindings>>) =>
        found.findings.map((f) => `${f.kind} ${f.orderId}`).sort();

      // Acknowledged in time (the slowest just so), and the silent one not yet late.
      const inTime = await listFindings(ctx().db, sandbox.businessId, { now, acknowledgeMs: slowest + 1 });
      assert.equal(inTime.checked, 4);
      assert.deepEqual(kinds(inTime), [`over-shipped ${cancelled.id}`, `over-shipped ${lowered.id}`].sort());
      const detail = inTime.findings.find((f) => f.orderId === lowered.id)!.detail;
      assert.equal(detail, `line ${1} shipped ${line.quantity} of ${line.quantity - 1}`);
      assert.match(
        inTime.findings.find((f) => f.orderId === cancelled.id)!.detail,
        /^Cancelled; line 1 shipped \d+ of 0/,
      );

      // A millisecond less, the slowest acknowledgement is late, and so is the silent order.
      const late = await listFindings(ctx().db, sandbox.businessId, { now: now + slowest, acknowledgeMs: slowest - 1 });
      const slow = acks.find((a) => at(a.created_at) - madeAt.get(a.order_id)! === slowest)!.order_id;
      assert.ok(kinds(late).includes(`not-acknowledged ${slow}`));
      assert.ok(kinds(late).includes(`not-acknowledged ${silent.id}`));

      // Voiding the lowered order's shipment puts it right.
      assert.equal((await ctx().request('DELETE', `/api/v1/shipments/${shipment.id}`, { as: sandbox })).status, 200);
      const after = await listFindings(ctx().db, sandbox.businessId, { now, acknowledgeMs: slowest + 1 });
      assert.deepEqual(kinds(after), [`over-shipped ${cancelled.id}`]);
    });
  },
  { config: { secretKeys: [SECRET_KEY] } },
);
