import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startReceiver } from '../helpers/receiver.ts';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  createPgDatabase,
  missing,
  orderBody,
  sleep,
  startServer,
  startServers,
  type Server,
} from './helpers.ts';

async function waitFor(done: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

describe('Webhook delivery by three instances on one PostgreSQL, one killed mid-delivery', () => {
  const skip = missing('postgres');
  let database: Awaited<ReturnType<typeof createPgDatabase>> | undefined;
  let servers: Server[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;

  before(async () => {
    if (skip) return;
    database = await createPgDatabase();
    // A slow receiver, so that deliveries are in flight when an instance dies.
    receiver = await startReceiver(async (_r, res) => {
      await sleep(30);
      res.writeHead(200).end();
    });
    const env = {
      DATABASE_URL: database.url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'on',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_SCHEDULE: '0,1,1,1,1,1,1,1,1,1',
      WEBHOOK_CONCURRENCY: '8',
    };
    servers = [await startServer(env)];
    servers.push(...(await startServers(2, env)));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await receiver?.close();
    await database?.drop();
  });

  it('every event reaches the receiver at least once, each resource in order; duplicates are counted', {
    skip: skip ?? false,
  }, async () => {
    const t = await cliCreateBusiness(database!.url, 'Webhook reliability');
    const endpoint = await call(servers[0].base, 'POST', '/api/v1/webhook-endpoints', {
      as: t,
      body: { url: receiver!.url, eventTypes: ['order.*'] },
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const catalogue = await createCatalogue(servers[1].base, t);

    // 12 writers over the three instances: creates, and PATCHes of orders already made, until after the kill.
    const created: string[] = [];
    let running = true;
    let n = 0;
    const writers = Array.from({ length: 12 }, async (_v, w) => {
      while (running) {
        const i = n++;
        const base = servers[(w + i) % servers.length].base;
        if (created.length > 0 && i % 2 === 1) {
          await call(base, 'PATCH', `/api/v1/orders/${created[i % created.length]}`, {
            as: t,
            body: { order: { properties: { [`p${i}`]: i } } },
          });
        } else {
          const r = await call(base, 'POST', `/api/v1/buyers/${catalogue.buyerId}/orders`, {
            as: t,
            body: orderBody(catalogue.variantId),
          });
          if (r.status === 201) created.push(r.body.id);
        }
      }
    });
    // Real processes, so no clock to move: the steps wait for what they need, polling.
    await receiver!.until((r) => r.length >= 30, 60_000);
    // kill -9 the instance that queued the endpoint's first deliveries, in the middle of the load.
    await servers[2].kill();
    servers = servers.slice(0, 2);
    const writesAtKill = n;
    await waitFor(() => n >= writesAtKill + 60, 'writes after the kill');
    running = false;
    await Promise.all(writers);

    // Every order event of the feed must arrive; the dead instance's claims come back after their lease (9 s).
    const feed: any[] = [];
    for (let after = 0; ; ) {
      const page = await call(servers[0].base, 'GET', `/api/v1/events?after=${after}&limit=1000&types=order.*`, {
        as: t,
      });
      feed.push(...page.body.items);
      after = page.body.lastSequence;
      if (!page.body.hasMore) break;
    }
    assert.ok(feed.length > 50, `only ${feed.length} order events were written`);
    const ids = new Set(feed.map((e) => e.id));
    try {
      await receiver!.until(
        (r) => new Set(r.map((x) => x.event.id).filter((id) => ids.has(id))).size === ids.size,
        60_000,
      );
    } catch (error) {
      // What the queue looks like, and what the instances said, to tell a stall from a slow run.
      const c = new pg.Client({ connectionString: database!.url });
      await c.connect();
      const states = await c.query(
        'select status, count(*)::int as n, min(due_at) as due from webhook_deliveries group by status',
      );
      const cursor = await c.query(
        'select e.cursor_sequence, e.status, c.value from webhook_endpoints e join business_counters c on c.business_id = e.business_id and c.name = $1',
        ['event'],
      );
      await c.end();
      throw new Error(
        `${(error as Error).message.slice(0, 300)}\nqueue: ${JSON.stringify(states.rows)}\nendpoint: ${JSON.stringify(cursor.rows)}\n` +
          servers.map((s, i) => `instance ${i}:\n${s.output().slice(-3000)}`).join('\n'),
      );
    }

    const verifier = new Webhook(endpoint.body.secret);
    const arrivals = new Map<string, number[]>();
    for (const r of receiver!.received) {
      verifier.verify(r.body, r.headers);
      const key = r.event.resourceId;
      arrivals.set(key, [...(arrivals.get(key) ?? []), r.event.sequence]);
    }
    // Per resource, never an event before an earlier one: a repeat (redelivery after the crash) only ever repeats the latest.
    for (const [key, sequences] of arrivals) {
      for (let i = 1; i < sequences.length; i++)
        assert.ok(sequences[i] >= sequences[i - 1], `${key}: ${sequences.join(',')}`);
    }
    const byId = new Map<string, any>(feed.map((e) => [e.id, e]));
    for (const r of receiver!.received) assert.equal(r.body, JSON.stringify(byId.get(r.event.id)));
    const duplicates = receiver!.received.length - ids.size;
    console.log(
      `# webhooks: ${ids.size} events, ${receiver!.received.length} deliveries received, ${duplicates} duplicates after the kill`,
    );
  });
});
