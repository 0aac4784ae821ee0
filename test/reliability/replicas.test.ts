import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { UNREACHABLE } from '../../src/db/replicas/replica.ts';
import { startReplicatedCluster, type ReplicatedCluster } from '../helpers/replica-cluster.ts';
import {
  call,
  cliCreateBusiness,
  createCatalogue,
  missing,
  orderBody,
  sleep,
  startServers,
  type Server,
  type Tenant,
} from './helpers.ts';

const WRITERS = 16;
const SECONDS = Number(process.env.RELIABILITY_REPLICAS_SECONDS || 10);

/** The sum over the instances of one series of /metrics, e.g. `supplyline_reads_total{target="replica"}`. */
async function metric(servers: Server[], series: string): Promise<number> {
  let sum = 0;
  for (const s of servers) {
    const text = (await call(s.base, 'GET', '/metrics')).body as string;
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    sum += line ? Number(line.slice(series.length + 1)) : 0;
  }
  return sum;
}

async function replicaStates(server: Server): Promise<string[]> {
  const ready = await call(server.base, 'GET', '/readyz');
  return (ready.body?.replicas ?? []).map((r: { state: string }) => r.state);
}

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(100);
  }
}

/**
 * Issue 65: three instances on a primary and a streaming replica of it (clusters of the test's own,
 * made with initdb and pg_basebackup), DATABASE_REPLICA_URLS set. While 16 writers create and PATCH
 * orders, each reads back what it wrote through another instance, a poller follows `modifiedSince`
 * and a follower the feed, and the replica's replay is paused and resumed again and again. No read
 * is older than the writes before it, the copies equal the primary, and a share of reads was the
 * replica's.
 */
describe('Reads from a streaming replica, three instances', () => {
  const skip = missing('postgres');
  let cluster: ReplicatedCluster | undefined;
  let servers: Server[] = [];
  let t: Tenant;

  before(async () => {
    if (skip) return;
    cluster = await startReplicatedCluster();
    servers = await startServers(3, {
      DATABASE_URL: cluster.primaryUrl(),
      DATABASE_REPLICA_URLS: cluster.replicaUrl(),
    });
    t = await cliCreateBusiness(cluster.primaryUrl(), 'Replicated Supplier');
    for (const s of servers) await until('the replica is up', async () => (await replicaStates(s))[0] === 'up');
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await cluster?.stop();
  });

  it('reads every write back through another instance, and the poller and the feed miss nothing, while replay pauses', {
    skip: skip ?? false,
  }, async () => {
    const at = (i: number) => servers[i % servers.length]!.base;
    const { variantId, buyerId } = await createCatalogue(at(0), t);
    const readsBefore = await metric(servers, 'supplyline_reads_total{target="replica"}');
    let writing = true;
    const stale: string[] = [];
    let checked = 0;

    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      const mine: string[] = [];
      for (let n = 0; writing; n++) {
        let id: string;
        let version: number;
        let notes: string | null;
        if (n % 4 === 0 || mine.length === 0) {
          const created = await call(at(w + n), 'POST', `/api/v1/buyers/${buyerId}/orders`, {
            as: t,
            body: orderBody(variantId, { notes: `writer ${w}, order ${n}` }),
          });
          assert.equal(created.status, 201, JSON.stringify(created.body));
          ({ id, version, notes } = created.body);
          mine.push(id);
        } else {
          id = mine[n % mine.length]!;
          const patched = await call(at(w + n), 'PATCH', `/api/v1/orders/${id}`, {
            as: t,
            body: { order: { notes: `writer ${w}, write ${n}` } },
          });
          assert.equal(patched.status, 200, JSON.stringify(patched.body));
          ({ version, notes } = patched.body);
        }
        // Only this writer changes its orders: the read must show exactly what it wrote.
        const read = await call(at(w + n + 1), 'GET', `/api/v1/orders/${id}`, { as: t });
        checked++;
        if (read.status !== 200 || read.body.version !== version || read.body.notes !== notes)
          stale.push(
            `${id}: wrote v${version} '${notes}', read ${read.status} v${read.body?.version} '${read.body?.notes}'`,
          );
      }
    });

    const polled = new Map<string, any>();
    const cursor = { since: '1970-01-01T00:00:00.000Z' };
    let polls = 0;
    const poll = async () => {
      let brought = 0;
      let largest = cursor.since;
      for (let page = 1; ; page++) {
        const res = await call(
          at(polls++),
          'GET',
          `/api/v1/orders?modifiedSince=${encodeURIComponent(cursor.since)}&limit=100&page=${page}`,
          { as: t },
        );
        assert.equal(res.status, 200, JSON.stringify(res.body));
        for (const order of res.body.items) {
          polled.set(order.id, order);
          if (order.updatedAt > largest) largest = order.updatedAt;
        }
        brought += res.body.items.length;
        if (res.body.items.length < 100) break;
      }
      cursor.since = largest;
      return brought;
    };

    const followed = new Map<string, any>();
    const feed = { last: 0, gaps: [] as string[], reads: 0 };
    const follow = async (wait: number) => {
      const res = await call(at(feed.reads++), 'GET', `/api/v1/events?after=${feed.last}&limit=500&wait=${wait}`, {
        as: t,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const event of res.body.items) {
        if (event.sequence !== feed.last + 1) feed.gaps.push(`after ${feed.last} came ${event.sequence}`);
        feed.last = event.sequence;
        if (event.resourceType === 'order') followed.set(event.resourceId, event.data.object);
      }
      feed.last = Math.max(feed.last, res.body.lastSequence);
    };

    const poller = (async () => {
      while (writing) await poll();
    })();
    const follower = (async () => {
      while (writing) await follow(1);
    })();
    let pauses = 0;
    const pauser = (async () => {
      while (writing) {
        await sleep(700);
        if (!writing) break;
        await cluster!.onReplica('select pg_wal_replay_pause()');
        pauses++;
        await sleep(900);
        await cluster!.onReplica('select pg_wal_replay_resume()');
      }
    })();

    await sleep(SECONDS * 1000);
    writing = false;
    await Promise.all([...writers, poller, follower, pauser]);
    await cluster!.onReplica('select pg_wal_replay_resume()');

    assert.deepEqual(stale, [], `${stale.length} of ${checked} reads were older than the write before them`);
    assert.ok(checked > WRITERS * 5, `only ${checked} write-then-read checks`);
    assert.ok(pauses >= 3, `replay paused ${pauses} times`);

    // The primary's state, read there directly.
    const primary = new pg.Client({ connectionString: cluster!.primaryUrl() });
    await primary.connect();
    const { rows } = await primary.query<{ id: string; version: number; notes: string | null }>(
      'select id, version, notes from orders where business_id = $1 order by id',
      [t.businessId],
    );
    const latest = Number(
      (
        await primary.query(`select value from business_counters where business_id = $1 and name = 'event'`, [
          t.businessId,
        ])
      ).rows[0].value,
    );
    await primary.end();

    while ((await poll()) > 0);
    while (feed.last < latest) await follow(0);
    assert.deepEqual(feed.gaps, []);
    assert.equal(feed.last, latest);
    const shape = (copy: Map<string, any>) =>
      [...copy.values()]
        .map((o) => ({ id: o.id, version: o.version, notes: o.notes }))
        .sort((a, b) => (a.id < b.id ? -1 : 1));
    const truth = rows.map((r) => ({ id: r.id, version: r.version, notes: r.notes }));
    assert.deepEqual(shape(polled), truth, "the poller's copy");
    assert.deepEqual(shape(followed), truth, "the feed follower's copy");

    const replica = (await metric(servers, 'supplyline_reads_total{target="replica"}')) - readsBefore;
    const primaryReads = await metric(servers, 'supplyline_reads_total{target="primary"}');
    console.log(
      `# ${checked} write-then-read checks, ${pauses} pauses; reads: ${replica} from the replica, ${primaryReads} from the primary`,
    );
    assert.ok(replica > 0, 'no read went to the replica');
  });

  it('answers with Supplyline-Position, takes Consistent-After, and sends a read past the replica to the primary', {
    skip: skip ?? false,
  }, async () => {
    const [s] = servers;
    const { variantId, buyerId } = await createCatalogue(s!.base, t);
    const created = await call(s!.base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
      as: t,
      body: orderBody(variantId),
    });
    const position = created.headers.get('supplyline-position');
    assert.match(position ?? '', /^[0-9A-F]+\/[0-9A-F]+$/);
    const path = `/api/v1/orders/${created.body.id}`;
    const read = await call(s!.base, 'GET', path, { as: t, headers: { 'consistent-after': position! } });
    assert.equal(read.status, 200);
    assert.match(read.headers.get('supplyline-position') ?? '', /^[0-9A-F]+\/[0-9A-F]+$/);
    assert.equal((await call(s!.base, 'GET', path, { as: t, headers: { 'consistent-after': '3' } })).status, 200);
    const bad = await call(s!.base, 'GET', path, { as: t, headers: { 'consistent-after': 'yesterday' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errorCode, 'VALIDATION_ERROR');

    // A position no replica has (nor the primary yet): the read is the primary's.
    const before = await metric([s!], 'supplyline_reads_total{target="primary"}');
    const ahead = await call(s!.base, 'GET', path, { as: t, headers: { 'consistent-after': 'FFFFFFFF/0' } });
    assert.equal(ahead.status, 200);
    assert.equal((await metric([s!], 'supplyline_reads_total{target="primary"}')) - before, 1);
  });

  it('wakes a long poll served by the replica for a commit the paused replica lacks, by reading again where it is', {
    skip: skip ?? false,
  }, async () => {
    const [s] = servers;
    const { variantId, buyerId } = await createCatalogue(s!.base, t);
    let after = 0;
    for (let more = true; more; ) {
      const page = (await call(s!.base, 'GET', `/api/v1/events?after=${after}&limit=1000`, { as: t })).body;
      after = page.lastSequence;
      more = page.hasMore;
    }
    await until('a read goes to the replica', async () => {
      const before = await metric([s!], 'supplyline_reads_total{target="replica"}');
      await call(s!.base, 'GET', `/api/v1/events?after=${after}&limit=1`, { as: t });
      return (await metric([s!], 'supplyline_reads_total{target="replica"}')) > before;
    });
    const waiting = call(s!.base, 'GET', `/api/v1/events?after=${after}&limit=100&wait=8`, { as: t });
    await sleep(300);
    await cluster!.onReplica('select pg_wal_replay_pause()');
    try {
      const created = await call(servers[1]!.base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
        as: t,
        body: orderBody(variantId),
      });
      assert.equal(created.status, 201);
      const page = (await waiting).body;
      assert.ok(
        page.items.some((e: any) => e.resourceId === created.body.id),
        `the woken poll read ${JSON.stringify(page.items.map((e: any) => e.type))}`,
      );
    } finally {
      await cluster!.onReplica('select pg_wal_replay_resume()');
    }
  });

  it('reports the replica in /readyz and /metrics, takes it out when it stops, and back when it returns', {
    skip: skip ?? false,
  }, async () => {
    const [s] = servers;
    const { variantId, buyerId } = await createCatalogue(s!.base, t);
    const created = await call(s!.base, 'POST', `/api/v1/buyers/${buyerId}/orders`, {
      as: t,
      body: orderBody(variantId),
    });
    const path = `/api/v1/orders/${created.body.id}`;
    const text = (await call(s!.base, 'GET', '/metrics')).body as string;
    assert.match(text, /supplyline_replica_lag_bytes\{replica="127\.0\.0\.1:\d+\/supplyline"\} \d+/);
    assert.match(text, /supplyline_replica_lag_seconds\{replica="127\.0\.0\.1:\d+\/supplyline"\} [\d.]+/);

    await cluster!.stopReplica();
    await until('the replica is taken out', async () => (await replicaStates(s!))[0] === 'down');
    const ready = await call(s!.base, 'GET', '/readyz');
    assert.equal(ready.status, 200, 'reads go to the primary: the instance stays ready');
    // Unauthenticated, so it names no host and no driver message: the log names both.
    assert.deepEqual(Object.keys(ready.body.replicas[0]).sort(), [
      'lagBytes',
      'lagSeconds',
      'reason',
      'replayed',
      'replica',
      'state',
    ]);
    assert.equal(ready.body.replicas[0].replica, 1);
    assert.equal(ready.body.replicas[0].reason, UNREACHABLE);
    assert.doesNotMatch(JSON.stringify(ready.body), /127\.0\.0\.1|ECONNREFUSED|terminat/i);
    assert.match((await call(s!.base, 'GET', '/metrics')).body, /supplyline_replica_up\{replica="[^"]+"\} 0/);
    for (let i = 0; i < 5; i++) assert.equal((await call(s!.base, 'GET', path, { as: t })).status, 200);

    await cluster!.startReplica();
    await until('the replica is back', async () => (await replicaStates(s!))[0] === 'up', 30_000);
    const before = await metric([s!], 'supplyline_reads_total{target="replica"}');
    await until('a read goes to the replica again', async () => {
      assert.equal((await call(s!.base, 'GET', path, { as: t })).status, 200);
      return (await metric([s!], 'supplyline_reads_total{target="replica"}')) > before;
    });
  });
});
