import assert from 'node:assert/strict';
import { createServer, type Server as NetServer, type Socket, connect as connectTcp } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { isDatabaseUnavailable } from '../../src/db/errors.ts';
import { parsePosition, ReadReplicas } from '../../src/db/replicas/index.ts';
import type { Replica } from '../../src/db/replicas/replica.ts';
import { watched } from '../../src/db/replicas/watched.ts';
import { startReplicatedCluster, type ReplicatedCluster } from '../helpers/replica-cluster.ts';
import { missing, sleep } from './helpers.ts';

/** A TCP proxy to `port` that can hold every byte (a replica that stalls) or cut every connection. */
async function startProxy(port: number) {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: NetServer = createServer((inbound) => {
    const outbound = connectTcp(port, '127.0.0.1');
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    freeze: (on: boolean) => {
      frozen = on;
    },
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The replicas' probe and choice against real clusters (a primary and a streaming replica of the
 * test's own): what the hostile review of read replicas found. Without the server, so each case
 * sees one ReadReplicas.
 */
describe('Read replicas: probes, stalls and lost connections', () => {
  const skip = missing('postgres');
  let cluster: ReplicatedCluster | undefined;
  const primaryPool = () => {
    const pool = new pg.Pool({ connectionString: cluster!.primaryUrl(), max: 2 });
    return { connect: () => pool.connect(), openSnapshot: async () => Promise.reject(new Error('unused')), pool };
  };
  const opened: Array<{ close(): Promise<unknown> }> = [];
  const open = (replicaUrl: string) => {
    const primary = primaryPool();
    const replicas = new ReadReplicas(cluster!.primaryUrl(), primary, [replicaUrl]);
    opened.push({ close: () => replicas.close().then(() => primary.pool.end()) });
    return replicas;
  };
  /** Replicas of one, reached through a proxy that can stall or cut it. */
  const openThroughProxy = async () => {
    const proxy = await startProxy(Number(new URL(cluster!.replicaUrl()).port));
    opened.push({ close: proxy.close });
    const url = new URL(cluster!.replicaUrl());
    url.port = String(proxy.port);
    return { proxy, replicas: open(url.toString()) };
  };
  const upWithin = async (replicas: ReadReplicas, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (replicas.status()[0]!.state !== 'up') {
      if (Date.now() > deadline) throw new Error(`the replica is not up: ${replicas.status()[0]!.reason}`);
      await replicas.probe();
      await sleep(50);
    }
  };
  const read = (replicas: ReadReplicas) =>
    replicas.run(replicas.newRead(null), () =>
      sql<{ n: number }>`select count(*)::int as n from orders`.execute(replicas.db),
    );

  before(async () => {
    if (skip) return;
    cluster = await startReplicatedCluster();
    await cluster.onPrimary('select 1');
    const client = new pg.Client({ connectionString: cluster.primaryUrl() });
    await client.connect();
    await client.query('create table orders (id text primary key)');
    await client.end();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await cluster?.stop();
  });

  it('keeps a healthy replica up from one probe to the next', { skip: skip ?? false }, async () => {
    const replicas = open(cluster!.replicaUrl());
    replicas.start();
    await upWithin(replicas);
    const states = new Set<string>();
    // Each probe raced a timer of 2 s that was never cleared: it took the replica out 2 s after every probe.
    for (let i = 0; i < 35; i++) {
      states.add(replicas.status()[0]!.state);
      await sleep(100);
    }
    assert.deepEqual([...states], ['up'], `taken out: ${replicas.status()[0]!.reason}`);
  });

  it('takes out a replica that has replayed past the primary, and one without the tables', {
    skip: skip ?? false,
  }, async () => {
    const replicas = open(cluster!.replicaUrl());
    await upWithin(replicas);
    const replica = replicas.replicas[0]!;
    const row = await replica.check();
    const replayed = parsePosition(row.replayed!)!;
    replica.judge(row, replayed, row.system);
    assert.equal(replica.up, true);
    replica.judge(row, replayed - 1n, row.system);
    assert.equal(replica.up, false);
    assert.match(replica.reason!, /replayed past the primary's position/);

    // The right cluster, the wrong database: every read would fail with "relation does not exist".
    const wrong = open(cluster!.replicaUrl('postgres'));
    await wrong.probe();
    assert.equal(wrong.status()[0]!.state, 'down');
    assert.match(wrong.status()[0]!.reason!, /tables are not in this database/);
  });

  it('reads a replay position that arrived while the event loop was held, rather than taking the replica out', {
    skip: skip ?? false,
  }, async () => {
    const replicas = open(cluster!.replicaUrl());
    await upWithin(replicas);
    const replica = replicas.replicas[0]!;
    assert.notEqual(await replica.replay(), null, 'the connection of the replay query is open');
    const asked = replica.replay(50);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    // A long collection or a large render: the answer comes in while the 50 ms pass.
    const until = Date.now() + 300;
    while (Date.now() < until);
    assert.notEqual(await asked, null);
    assert.equal(replicas.status()[0]!.state, 'up', replicas.status()[0]!.reason);
  });

  it('does not hold a read behind a replica that stalls, and takes it out', {
    skip: skip ?? false,
    timeout: 20_000,
  }, async () => {
    const { proxy, replicas } = await openThroughProxy();
    await upWithin(replicas);
    proxy.freeze(true);
    try {
      const started = Date.now();
      const { rows } = await read(replicas);
      assert.equal(rows[0]!.n, 0);
      const took = Date.now() - started;
      assert.ok(took < 2000, `the read waited ${took} ms for the stalled replica`);
      assert.equal(replicas.status()[0]!.state, 'down');
      assert.match(replicas.status()[0]!.reason!, /no answer to its replay position/);
    } finally {
      proxy.freeze(false);
    }
  });

  it('takes a replica out at once when its connection is lost during a read, and answers that read from the primary', {
    skip: skip ?? false,
  }, async () => {
    const { proxy, replicas } = await openThroughProxy();
    const targets: string[] = [];
    replicas.onChoice = (target) => targets.push(target);
    await upWithin(replicas);
    await read(replicas);
    assert.deepEqual(targets, ['replica']);
    // The replica goes away while a read's statement runs on it: the statement runs again on the primary.
    const server = (rows: Array<{ recovering: boolean }>) => (rows[0]!.recovering ? 'replica' : 'primary');
    const whereRead = replicas.newRead(null);
    const slow = replicas.run(whereRead, async () => {
      const first = await sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering`.execute(replicas.db);
      const second = await sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering, pg_sleep(1)`.execute(
        replicas.db,
      );
      const third = await sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering`.execute(replicas.db);
      return [first, second, third].map((r) => server(r.rows));
    });
    await sleep(300);
    proxy.cut();
    assert.deepEqual(
      await slow,
      ['replica', 'primary', 'primary'],
      'the lost statement and the rest of its read on the primary',
    );
    assert.equal(replicas.status()[0]!.state, 'down');
    // In a transaction a statement is not run again elsewhere: the transaction fails, as it would alone.
    await upWithin(replicas);
    const inTransaction = replicas.run(replicas.newRead(null), () =>
      replicas.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await sleep(400);
        return sql`select 1`.execute(trx);
      }),
    );
    await sleep(200);
    proxy.cut();
    await assert.rejects(inTransaction, (error) => isDatabaseUnavailable(error));
    targets.length = 0;
    await read(replicas);
    assert.deepEqual(targets, ['primary'], 'the next read goes to the primary, not to the lost replica');
  });

  it('cuts a statement a stalled replica holds when the probe finds it silent, and answers it from the primary', {
    skip: skip ?? false,
    timeout: 20_000,
  }, async () => {
    const { proxy, replicas } = await openThroughProxy();
    await upWithin(replicas);
    const waiting = replicas.run(replicas.newRead(null), () =>
      sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering, pg_sleep(0.3)`.execute(replicas.db),
    );
    await sleep(100);
    proxy.freeze(true);
    try {
      const started = Date.now();
      await replicas.probe();
      const { rows } = await waiting;
      assert.equal(rows[0]!.recovering, false, 'answered by the primary');
      assert.ok(Date.now() - started < 5000, `the read waited ${Date.now() - started} ms`);
      assert.equal(replicas.status()[0]!.state, 'down');
    } finally {
      proxy.freeze(false);
    }
  });

  it("cuts an export's statement on a replica that stalls, and fails it as an outage (503)", {
    skip: skip ?? false,
    timeout: 20_000,
  }, async () => {
    const { proxy, replicas } = await openThroughProxy();
    await upWithin(replicas);
    const snapshot = await replicas.run(replicas.newRead(null), () => replicas.openSnapshot());
    const waiting = sql`select pg_sleep(0.3)`.execute(snapshot.db);
    await sleep(100);
    proxy.freeze(true);
    try {
      const started = Date.now();
      await replicas.probe();
      await assert.rejects(waiting, (error) => isDatabaseUnavailable(error));
      assert.ok(Date.now() - started < 5000, `the export waited ${Date.now() - started} ms`);
    } finally {
      proxy.freeze(false);
      await snapshot.release().catch(() => {});
    }
  });

  it('sends a read to the primary while every connection to the replica is taken, and keeps the replica up', {
    skip: skip ?? false,
  }, async () => {
    const primary = primaryPool();
    const replicas = new ReadReplicas(cluster!.primaryUrl(), primary, [cluster!.replicaUrl()], { poolSize: 1 });
    opened.push({ close: () => replicas.close().then(() => primary.pool.end()) });
    await upWithin(replicas);
    const targets: string[] = [];
    replicas.onChoice = (target) => targets.push(target);
    const where = (rows: Array<{ recovering: boolean }>) => (rows[0]!.recovering ? 'replica' : 'primary');
    const holding = replicas.run(replicas.newRead(null), () =>
      sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering, pg_sleep(1.5)`.execute(replicas.db),
    );
    await sleep(300);
    const started = Date.now();
    const meanwhile = await replicas.run(replicas.newRead(null), () =>
      sql<{ recovering: boolean }>`select pg_is_in_recovery() as recovering`.execute(replicas.db),
    );
    assert.equal(where(meanwhile.rows), 'primary');
    assert.ok(Date.now() - started < 1000, 'it did not wait for the connection');
    assert.equal(replicas.status()[0]!.state, 'up', 'a busy replica is not a lost one');
    await replicas.probe();
    assert.equal(replicas.status()[0]!.state, 'up', replicas.status()[0]!.reason);
    assert.equal(where((await holding).rows), 'replica');
    assert.deepEqual(targets, ['replica', 'primary']);
  });

  it("counts a read whose chosen replica cannot be reached once, as the primary's", {
    skip: skip ?? false,
  }, async () => {
    const replicas = open(cluster!.replicaUrl());
    const targets: string[] = [];
    replicas.onChoice = (target) => targets.push(target);
    await upWithin(replicas);
    const replica = replicas.replicas[0]! as { connect: () => Promise<pg.PoolClient> };
    let calls = 0;
    // Its replay position is read on a connection of the probe's, and the replica is chosen; the read's own fails.
    replica.connect = () => {
      calls++;
      return Promise.reject(new Error('connect ECONNREFUSED'));
    };
    const { rows } = await read(replicas);
    assert.equal(rows[0]!.n, 0);
    assert.equal(calls, 1);
    assert.deepEqual(targets, ['primary'], 'counted once, by the database that served it');
    assert.equal(replicas.status()[0]!.state, 'down');
  });

  it('opens an export on the primary when its chosen replica cannot give it a snapshot', {
    skip: skip ?? false,
  }, async () => {
    const pool = new pg.Pool({ connectionString: cluster!.primaryUrl(), max: 2 });
    const onPrimary = { marker: 'primary snapshot' };
    const primary = {
      connect: () => pool.connect(),
      openSnapshot: async () => onPrimary as unknown as Awaited<ReturnType<ReadReplicas['openSnapshot']>>,
    };
    const replicas = new ReadReplicas(cluster!.primaryUrl(), primary, [cluster!.replicaUrl()]);
    opened.push({ close: () => replicas.close().then(() => pool.end()) });
    await upWithin(replicas);
    const targets: string[] = [];
    replicas.onChoice = (target) => targets.push(target);
    const replica = replicas.replicas[0]! as unknown as { openSnapshot: () => Promise<unknown> };
    replica.openSnapshot = () =>
      Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const snapshot = await replicas.run(replicas.newRead(null), () => replicas.openSnapshot());
    assert.equal(snapshot, onPrimary);
    assert.deepEqual(targets, ['primary']);
    assert.equal(replicas.status()[0]!.state, 'down');
  });

  it("reports the lag of a replica that stopped receiving the primary's WAL", { skip: skip ?? false }, async () => {
    const replicas = open(cluster!.replicaUrl());
    await upWithin(replicas);
    const [{ primary_conninfo: conninfo }] = (await cluster!.onReplica('show primary_conninfo')) as Array<{
      primary_conninfo: string;
    }>;
    await cluster!.onReplica("alter system set primary_conninfo = 'host=127.0.0.1 port=1 user=postgres'");
    await cluster!.onReplica('select pg_reload_conf()');
    try {
      await sleep(500);
      const deadline = Date.now() + 10_000;
      let lag = 0;
      while (lag < 2) {
        if (Date.now() > deadline) throw new Error(`the lag stayed at ${lag} s: ${JSON.stringify(replicas.status())}`);
        const client = new pg.Client({ connectionString: cluster!.primaryUrl() });
        await client.connect();
        await client.query('insert into orders values (gen_random_uuid()::text)');
        await client.end();
        await replicas.probe();
        lag = replicas.status()[0]!.lagSeconds ?? 0;
        await sleep(400);
      }
      assert.ok(replicas.status()[0]!.lagBytes! > 0);
    } finally {
      await cluster!.onReplica(`alter system set primary_conninfo = '${conninfo.replaceAll("'", "''")}'`);
      await cluster!.onReplica('select pg_reload_conf()');
    }
  });

  it("runs a statement that replay cancelled again on the primary in any server language, and never a transaction's", async () => {
    type Fake = { query: (...args: unknown[]) => Promise<unknown>; getTransactionStatus: () => string };
    const taken: string[] = [];
    const fakeReplica = { lost: (error: Error) => taken.push(error.message) } as unknown as Replica;
    const german = () =>
      Object.assign(new Error('storniere Anfrage wegen Konflikt mit der Wiederherstellung'), { code: '40001' });
    const clientIn = (status: string): Fake => ({
      query: async (text: unknown) => {
        if (String(text).startsWith('select')) throw german();
        return { rows: [] };
      },
      getTransactionStatus: () => status,
    });
    const again: unknown[] = [];
    const onPrimary = async (args: unknown[]) => {
      again.push(args[0]);
      return { rows: [{ on: 'primary' }] };
    };
    const alone = watched(clientIn('I') as unknown as pg.PoolClient, fakeReplica, onPrimary);
    assert.deepEqual(await alone.query('select 1'), { rows: [{ on: 'primary' }] });
    assert.deepEqual(again, ['select 1']);
    // After a savepoint's rollback the transaction is still open (the server says T): not run elsewhere.
    const inside = watched(clientIn('T') as unknown as pg.PoolClient, fakeReplica, onPrimary);
    await inside.query('rollback to savepoint s');
    await assert.rejects(inside.query('select 2'), (error) => isDatabaseUnavailable(error));
    assert.deepEqual(again, ['select 1']);
    assert.equal(taken.length, 2);
    // Anything else a statement fails with is the statement's own.
    const syntax = watched(
      {
        query: async () => Promise.reject(Object.assign(new Error('syntax error'), { code: '42601' })),
        getTransactionStatus: () => 'I',
      } as unknown as pg.PoolClient,
      fakeReplica,
      onPrimary,
    );
    await assert.rejects(syntax.query('select 3'), /syntax error/);
    assert.equal(taken.length, 2);
  });

  it('takes a statement cancelled by replay for an outage (503), not a bug (500)', () => {
    const conflict = Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' });
    assert.equal(isDatabaseUnavailable(conflict), true);
    const serialization = Object.assign(new Error('could not serialize access'), { code: '40001' });
    assert.equal(isDatabaseUnavailable(serialization), false);
  });
});
