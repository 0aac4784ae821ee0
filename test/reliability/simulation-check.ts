/**
 * Issue 66's bar for the simulated buyer, at any rate and length: a simulation started as the
 * console starts one (a run with no driver) on PostgreSQL with three real server processes makes
 * exactly the orders it says, each in the sandbox's feed and delivered to the sandbox's webhook
 * endpoint, and nothing reaches the live business's feed. Midway the instance driving the run is
 * stopped (SIGTERM: it hands the run over) or killed (SIGKILL: another takes it once the lease
 * passes). Used by bench/simulation.ts (full length) and test/reliability/simulation.test.ts (short).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { setTimeout as wait } from 'node:timers/promises';
import { createDatabase } from '../../src/db/connection.ts';
import { findRun } from '../../src/sandbox/runs.ts';
import { startSimulation } from '../../src/sandbox/simulator.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';
import { startReceiver } from '../helpers/receiver.ts';
import {
  baseEnv,
  call,
  cliCreateBusiness,
  createCatalogue,
  startServers,
  type Server,
  type Tenant,
} from './helpers.ts';

export interface SimulationCheck {
  ordersPerMinute: number;
  minutes: number;
  /** How the driving instance leaves midway. */
  handover: 'stop' | 'kill';
  log?: (line: string) => void;
  /** How a server starts (the default: from source, within 60 s). */
  start?: (env: Record<string, string>) => Promise<Server>;
}

export interface SimulationOutcome {
  orders: number;
  counts: { created: number; changed: number; cancelled: number; received: number };
  seconds: number;
  /** Deliveries of order events (a retried one counts again), and the feed's order events. */
  delivered: number;
  feedEvents: number;
  /** Seconds from the run's end to the last order.created delivered. */
  drainSeconds: number;
  handedOver: boolean;
}

async function feedOf(base: string, as: Tenant) {
  const events: Array<{ type: string; livemode: boolean; data: { object: { id: string } } }> = [];
  for (let after = 0; ; ) {
    const page = await call(base, 'GET', `/api/v1/events?after=${after}&limit=1000`, { as });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    events.push(...page.body.items);
    if (!page.body.hasMore) return events;
    after = page.body.lastSequence;
  }
}

export async function checkSimulation(databaseUrl: string, check: SimulationCheck): Promise<SimulationOutcome> {
  const log = check.log ?? (() => {});
  const env = {
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_RPS: '0',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'on',
    SECRET_KEY: randomBytes(32).toString('base64'),
  };
  const servers: Server[] = await startServers(3, env, check.start);
  const receiver = await startReceiver();
  const handle = createDatabase(databaseUrl);
  try {
    const live = await cliCreateBusiness(databaseUrl, 'Simulation Supplier', undefined, env);
    await createCatalogue(servers[0].base, live);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...TYPESCRIPT, 'src/cli.ts', 'sandbox', 'create', '--from', live.businessId, '--json'],
      { env: { ...baseEnv, ...env } },
    );
    const made = JSON.parse(stdout.trim().split('\n').pop()!) as { sandboxId: string; apiKey: string };
    const sandbox: Tenant = {
      businessId: made.sandboxId,
      apiKey: made.apiKey,
      headers: { 'x-business-id': made.sandboxId, 'x-api-key': made.apiKey },
    };
    const hook = await call(servers[1].base, 'POST', '/api/v1/webhook-endpoints', {
      as: sandbox,
      body: { url: receiver.url, eventTypes: ['order.*'] },
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const liveBefore = (await call(servers[2].base, 'GET', '/api/v1/events', { as: live })).body.lastSequence;

    const started = Date.now();
    const run = await startSimulation(handle.db, createWriteRunner(handle.db), sandbox.businessId, {
      ordersPerMinute: check.ordersPerMinute,
      minutes: check.minutes,
      actor: SYSTEM,
      now: started,
    });
    log(`simulation ${run.id}: ${run.total} orders at ${check.ordersPerMinute} a minute, on 3 instances`);

    // Midway, the instance driving the run leaves; the run must go on elsewhere.
    await wait((check.minutes * 60_000) / 2);
    const owner = (
      await handle.db
        .selectFrom('simulation_runs')
        .select('lease_owner')
        .where('id', '=', run.id)
        .executeTakeFirstOrThrow()
    ).lease_owner;
    const driver = servers.find((s) => owner?.startsWith(`sw_${s.child.pid}_`));
    if (driver) {
      log(`${check.handover === 'kill' ? 'killing' : 'stopping'} the instance driving it (pid ${driver.child.pid})`);
      await (check.handover === 'kill' ? driver.kill() : driver.stop());
    }
    const rest = servers.filter((s) => s !== driver);

    let ended = await findRun(handle.db, sandbox.businessId, run.id);
    while (ended?.state === 'RUNNING') {
      await wait(200);
      ended = await findRun(handle.db, sandbox.businessId, run.id);
    }
    const endedAt = Date.now();
    assert.equal(ended?.state, 'FINISHED', JSON.stringify(ended));
    const seconds = (endedAt - started) / 1000;
    log(`finished in ${seconds.toFixed(1)} s: ${JSON.stringify(ended.counts)}`);

    // Exactly what it says: its count, its recorded orders, the sandbox's orders.
    assert.equal(ended.counts.created, run.total);
    const recorded = await handle.db
      .selectFrom('simulation_orders')
      .select('order_id')
      .where('run_id', '=', run.id)
      .execute();
    const ids = new Set(recorded.map((r) => r.order_id));
    assert.equal(ids.size, run.total);
    const listed = await call(rest[0].base, 'GET', '/api/v1/orders?limit=1', { as: sandbox });
    assert.equal(listed.body.total, run.total);

    // Each order in the feed, as many updates as the buyer's changes, cancellations and receipts.
    const feed = (await feedOf(rest[0].base, sandbox)).filter((e) => e.type.startsWith('order.'));
    assert.ok(feed.every((e) => e.livemode === false));
    const created = feed.filter((e) => e.type === 'order.created').map((e) => e.data.object.id);
    assert.deepEqual(new Set(created), ids);
    assert.equal(created.length, ids.size);
    const { changed, cancelled, received } = ended.counts;
    assert.equal(feed.filter((e) => e.type === 'order.updated').length, changed + cancelled + received);

    // Each order delivered to the sandbox's endpoint.
    await receiver.until(
      (got) =>
        new Set(got.filter((r) => r.event.type === 'order.created').map((r) => r.event.data.object.id)).size >=
        ids.size,
      120_000,
    );
    const drainSeconds = (Date.now() - endedAt) / 1000;
    const delivered = new Set(
      receiver.received.filter((r) => r.event.type === 'order.created').map((r) => r.event.data.object.id),
    );
    assert.deepEqual(delivered, ids);
    assert.ok(receiver.received.every((r) => r.event.livemode === false));

    // Nothing in the live business's feed.
    assert.equal((await call(rest[0].base, 'GET', '/api/v1/events', { as: live })).body.lastSequence, liveBefore);
    return {
      orders: ids.size,
      counts: ended.counts,
      seconds,
      delivered: receiver.received.length,
      feedEvents: feed.length,
      drainSeconds,
      handedOver: driver !== undefined,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await receiver.close();
    await handle.close();
  }
}
