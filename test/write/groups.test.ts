import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { before, it } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/types.ts';
import { sendWrite } from '../../src/db/pipeline.ts';
import { createWriteRunner, SYSTEM, type WriteContext, type WriteRunner } from '../../src/write/runner.ts';
import { WriteGroups } from '../../src/write/groups.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * A business's writes that wait for each other share one transaction: on PostgreSQL the runner
 * groups them (src/write/groups.ts), on SQLite the driver does (test/db/sqlite.test.ts). The rules
 * hold on both: nothing answered before it is durable, a failed write undone alone, a failed
 * commit failing every write of its group, each write in its own request's async context.
 */
describeEachBackend('a business’s writes committed together', (ctx) => {
  let runner: WriteRunner;
  let businessId: string;
  const request = new AsyncLocalStorage<string>();

  before(async () => {
    runner = createWriteRunner(ctx().db);
    businessId = (await ctx().createTenant()).businessId;
    await sql`create table group_rows (n integer not null, tx text)`.execute(ctx().db);
    await sql`create table group_parents (id integer primary key)`.execute(ctx().db);
    // A deferred foreign key is checked at COMMIT: the one way to make a commit fail on purpose.
    await sql`create table group_children (parent_id integer references group_parents (id) deferrable initially deferred)`.execute(
      ctx().db,
    );
  });

  const postgres = () => ctx().backend === 'postgres';
  /** The transaction a statement runs in, where the database can say (PostgreSQL). */
  const transactionOf = async (c: WriteContext) =>
    postgres() ? (await sql<{ tx: string }>`select txid_current()::text as tx`.execute(c.trx)).rows[0].tx : null;
  const insert = async (c: WriteContext, n: number) =>
    sql`insert into group_rows (n, tx) values (${n}, ${await transactionOf(c)})`.execute(c.trx);
  /** Whether a row is visible outside any write: committed. */
  const committed = async (n: number) =>
    Number((await sql<{ c: number }>`select count(*) as c from group_rows where n = ${n}`.execute(ctx().db)).rows[0].c);
  const run = (work: (c: WriteContext) => Promise<void>) => runner.run({ businessId, actor: SYSTEM }, work);
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  /** Groups on a pool of their own (PostgreSQL), whose connections a test may cut. */
  async function onOwnPool(work: (groups: WriteGroups) => Promise<void>) {
    const own = createDatabase(ctx().database.url, { schema: ctx().database.schema });
    try {
      await work(new WriteGroups(own.db, async () => {}));
    } finally {
      await own.close();
    }
  }
  /** Ends the transaction's connection from outside in 100 ms, while its statement runs. */
  async function cutSoon(trx: Transaction<Database>) {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
    setTimeout(() => void sql`select pg_terminate_backend(${rows[0].pid})`.execute(ctx().db), 100);
  }
  /** What the promise came to within `ms`, or 'waiting'. */
  const within = <T>(promise: Promise<T>, ms: number) =>
    Promise.race([promise, new Promise<'waiting'>((resolve) => setTimeout(resolve, ms, 'waiting'))]);

  it('answers each write only once it is durable, and commits the writes that waited together', async () => {
    const visibleWhenAnswered: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        run(async (c) => {
          await insert(c, 100 + i);
          await turn();
        }).then(async () => {
          visibleWhenAnswered.push(await committed(100 + i));
        }),
      ),
    );
    assert.deepEqual(visibleWhenAnswered, Array(10).fill(1));
    if (postgres()) {
      const { rows } = await sql<{
        tx: string;
      }>`select distinct tx from group_rows where n between 100 and 109`.execute(ctx().db);
      assert.ok(rows.length <= 2, `10 writes that waited for each other took ${rows.length} transactions`);
    }
  });

  it('rolls back only the write that failed, and commits the rest of its group', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        run(async (c) => {
          await insert(c, 200 + i);
          await turn();
          if (i === 2 || i === 4) throw new Error(`refused ${i}`);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal((results[2] as PromiseRejectedResult).reason.message, 'refused 2');
    assert.deepEqual(await Promise.all([0, 1, 2, 3, 4, 5].map((i) => committed(200 + i))), [1, 1, 0, 1, 0, 1]);
  });

  it('when the first write fails, the writes that waited for it still commit', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) =>
        run(async (c) => {
          await insert(c, 300 + i);
          await turn();
          if (i === 0) throw new Error('the first refused');
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(await Promise.all([0, 1, 2, 3].map((i) => committed(300 + i))), [0, 1, 1, 1]);
  });

  it('undoes a write whose statement failed, and goes on with the group', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) =>
        run(async (c) => {
          await insert(c, 400 + i);
          await turn();
          if (i === 2) await sql`insert into group_rows (n) values (null)`.execute(c.trx); // not null: the statement fails
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(await Promise.all([0, 1, 2, 3].map((i) => committed(400 + i))), [1, 1, 0, 1]);
  });

  it('undoes a write whose statement sent ahead failed, with that statement’s error, and goes on with the group', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        run(async (c) => {
          await insert(c, 450 + i);
          await turn();
          // Not null: fails, as the last statement of the first write and of a later one.
          if (i === 0 || i === 2) await sendWrite(c.trx, sql`insert into group_rows (n) values (null)`);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    for (const i of [0, 2]) assert.match((results[i] as PromiseRejectedResult).reason.message, /not[ -]null/i);
    assert.deepEqual(await Promise.all([0, 1, 2, 3, 4].map((i) => committed(450 + i))), [0, 1, 0, 1, 1]);
  });

  it('when a write sent ahead fails after its write ran, undoes that write and runs the next again once, with its events once', async () => {
    const runs = [0, 0, 0, 0, 0];
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        run(async (c) => {
          runs[i]++;
          c.emit({
            type: 'order.updated',
            resourceType: 'order',
            resourceId: `ord_again${i}`,
            object: { id: `ord_again${i}` },
          });
          await insert(c, 480 + i);
          await turn();
          // Not null: the last statement of the second write and of the last, sent and not waited for.
          if (i === 1 || i === 4) await sendWrite(c.trx, sql`insert into group_rows (n) values (null)`);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'rejected'],
    );
    for (const i of [1, 4]) assert.match((results[i] as PromiseRejectedResult).reason.message, /not[ -]null/i);
    assert.deepEqual(await Promise.all([0, 1, 2, 3, 4].map((i) => committed(480 + i))), [1, 0, 1, 1, 0]);
    const { rows } = await sql<{ resource_id: string }>`
      select resource_id from events where business_id = ${businessId} and resource_id like 'ord_again%' order by sequence`.execute(
      ctx().db,
    );
    assert.deepEqual(
      rows.map((r) => r.resource_id),
      ['ord_again0', 'ord_again2', 'ord_again3'],
    );
    // On PostgreSQL the write after the failed one learnt of it only once its own statements were answered, and ran again.
    assert.deepEqual(runs, postgres() ? [1, 1, 2, 1, 1] : [1, 1, 1, 1, 1]);
  });

  it('when the first write’s statement sent ahead fails, fails it alone and runs the write after it again in the next group', async () => {
    const runs = [0, 0, 0];
    const results = await Promise.allSettled(
      Array.from({ length: 3 }, (_, i) =>
        run(async (c) => {
          runs[i]++;
          await insert(c, 490 + i);
          await turn();
          // Not null: the first write's last statement, sent and not waited for.
          if (i === 0) await sendWrite(c.trx, sql`insert into group_rows (n) values (null)`);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled'],
    );
    assert.match((results[0] as PromiseRejectedResult).reason.message, /not[ -]null/i);
    assert.deepEqual(await Promise.all([0, 1, 2].map((i) => committed(490 + i))), [0, 1, 1]);
    // On PostgreSQL the second write learnt of it once its own statements were answered (the first
    // write was not waited for before it began), and ran again after the transaction was undone.
    assert.deepEqual(runs, postgres() ? [1, 2, 1] : [1, 1, 1]);
  });

  it('fails a write alone whose last statement sent ahead fails, at its commit', async () => {
    await assert.rejects(
      run(async (c) => {
        await insert(c, 470);
        await sendWrite(c.trx, sql`insert into group_rows (n) values (null)`);
      }),
      /not[ -]null/i,
    );
    assert.equal(await committed(470), 0);
  });

  it('fails every write of a group whose commit fails, keeps none of them, and goes on afterwards', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) =>
        run(async (c) => {
          await insert(c, 500 + i);
          await turn();
          if (i === 1) await sql`insert into group_children (parent_id) values (42)`.execute(c.trx);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'rejected', 'rejected'],
    );
    assert.deepEqual(await Promise.all([0, 1, 2, 3].map((i) => committed(500 + i))), [0, 0, 0, 0]);
    await run((c) => insert(c, 599).then(() => {}));
    assert.equal(await committed(599), 1);
  });

  it("runs each write in its own request's async context", async () => {
    const seen = new Map<string, string | undefined>();
    await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((name) =>
        request.run(name, () =>
          run(async () => {
            await turn();
            seen.set(name, request.getStore());
          }),
        ),
      ),
    );
    assert.deepEqual(Object.fromEntries(seen), { a: 'a', b: 'b', c: 'c', d: 'd', e: 'e' });
  });

  it("gives each write of a group a time later than the one before, and events numbered in the group's order", async () => {
    const times = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        run(async (c) => {
          c.emit({
            type: 'order.updated',
            resourceType: 'order',
            resourceId: `ord_group${i}`,
            object: { id: `ord_group${i}` },
          });
          await turn();
        }).then(() => i),
      ),
    );
    assert.equal(times.length, 8);
    const { rows } = await sql<{ sequence: number; occurred_at: string; resource_id: string }>`
      select sequence, occurred_at, resource_id from events
      where business_id = ${businessId} and resource_id like 'ord_group%' order by sequence`.execute(ctx().db);
    assert.deepEqual(
      rows.map((r) => r.resource_id),
      Array.from({ length: 8 }, (_, i) => `ord_group${i}`),
    );
    const occurred = rows.map((r) => new Date(r.occurred_at).getTime());
    for (let i = 1; i < occurred.length; i++) assert.ok(occurred[i] > occurred[i - 1], `times ${occurred}`);
    // The business's clock kept the group's last time: the next write is later still, even with a clock behind.
    const late = createWriteRunner(ctx().db, { clock: () => 0 });
    const next = await late.run({ businessId, actor: SYSTEM }, async (c) => c.now);
    assert.ok(Date.parse(next) > occurred.at(-1)!, `${next} after ${new Date(occurred.at(-1)!).toISOString()}`);
  });

  it('appends the events of the writes a group keeps in one statement, a resource’s versions counting on across them', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        run(async (c) => {
          for (const resourceId of ['ord_together', `ord_together${i}`])
            c.emit({ type: 'order.updated', resourceType: 'order', resourceId, object: { id: resourceId } });
          await turn();
          if (i === 3) throw new Error('refused 3');
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    const { rows } = await sql<{ resource_id: string; resource_version: number }>`
      select resource_id, resource_version from events
      where business_id = ${businessId} and resource_id like 'ord_together%' order by sequence`.execute(ctx().db);
    // Each kept write's two events, in the order the writes ran; the refused write's are not there.
    assert.deepEqual(
      rows.map((r) => [r.resource_id, Number(r.resource_version)]),
      [0, 1, 2, 4, 5].flatMap((i, n) => [
        ['ord_together', n + 1],
        [`ord_together${i}`, 1],
      ]),
    );
    if (postgres()) {
      // Rows one statement inserted share its (sub)transaction and command id; each write's own statement
      // would make five (each write but the first runs in a savepoint). The six writes make one group, two at most.
      const { rows: made } = await sql<{ statements: number }>`
        select count(distinct (xmin::text, cmin::text))::int as statements
        from events where business_id = ${businessId} and resource_id like 'ord_together%'`.execute(ctx().db);
      assert.ok(made[0].statements <= 2, `the five kept writes' events took ${made[0].statements} statements`);
    }
  });

  it('fails each waiting write, rather than waiting for ever, when no transaction can begin', async () => {
    // A database nothing listens on: every connection is refused.
    const down = createDatabase('postgres://postgres@127.0.0.1:1/nothing');
    try {
      const groups = new WriteGroups(down.db, async () => {});
      const settled = await within(
        Promise.allSettled([1, 2, 3].map((n) => groups.join(businessId, async () => n))),
        10_000,
      );
      assert.notEqual(settled, 'waiting', 'the writes were still waiting after 10 s');
      assert.deepEqual(
        (settled as PromiseSettledResult<number>[]).map((r) => r.status),
        ['rejected', 'rejected', 'rejected'],
      );
    } finally {
      await down.close();
    }
  });

  it('fails the first write, rather than leaving it unanswered, when its connection is lost and the rollback fails too', async (t) => {
    if (!postgres()) return t.diagnostic('SQLite has no connection to lose');
    await onOwnPool(async (groups) => {
      const lost = groups.join(businessId, async (trx) => {
        await cutSoon(trx);
        await sql`select pg_sleep(2)`.execute(trx);
      });
      const settled = await within(
        lost.then(
          () => 'answered',
          () => 'failed',
        ),
        5_000,
      );
      assert.equal(settled, 'failed');
    });
  });

  it('answers every write when a member’s connection is lost and its savepoint cannot be undone', async (t) => {
    if (!postgres()) return t.diagnostic('SQLite has no connection to lose');
    await onOwnPool(async (groups) => {
      const writes = [0, 1, 2].map((i) =>
        groups.join(businessId, async (trx) => {
          if (i === 0) await turn();
          if (i === 1) {
            await cutSoon(trx);
            await sendWrite(trx, sql`select pg_sleep(2)`);
          }
          if (i === 2) await sql`select 1`.execute(trx);
        }),
      );
      const settled = await within(Promise.allSettled(writes), 5_000);
      assert.notEqual(settled, 'waiting', 'a write was never answered');
      // The lost connection fails the first two; the third goes on in the next group, on a connection of its own.
      assert.deepEqual(
        (settled as PromiseSettledResult<void>[]).map((r) => r.status),
        ['rejected', 'rejected', 'fulfilled'],
      );
    });
  });

  it('begins a group with a long write rather than joining it to the write before: that write is answered without waiting for it', async (t) => {
    if (!postgres()) return t.diagnostic("SQLite's driver groups the writes that wait, which run one turn each");
    const order: string[] = [];
    let long: Promise<unknown> | undefined;
    const short = run(async (c) => {
      await insert(c, 700);
      // An import's batch asks while this write runs, and waits for it.
      long = runner.run({ businessId, actor: SYSTEM, long: true }, async (l) => {
        await insert(l, 701);
        await new Promise((resolve) => setTimeout(resolve, 300));
        order.push('long ran');
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }).then(() => order.push('short answered'));
    await Promise.all([short, new Promise((resolve) => setTimeout(resolve, 100)).then(() => long)]);
    assert.deepEqual(order, ['short answered', 'long ran']);
    assert.deepEqual([await committed(700), await committed(701)], [1, 1]);
  });

  it('begins the next group while the one before commits', async () => {
    if (postgres()) {
      // A COMMIT that takes half a second: a deferred trigger sleeps at commit.
      await sql`create table group_slow (n integer)`.execute(ctx().db);
      await sql`create function group_slow_commit() returns trigger language plpgsql as $$
        begin perform pg_sleep(0.5); return null; end $$`.execute(ctx().db);
      await sql`create constraint trigger group_slow_commit after insert on group_slow
        deferrable initially deferred for each row execute function group_slow_commit()`.execute(ctx().db);
    }
    const groups = new WriteGroups(ctx().db, async () => {});
    const order: string[] = [];
    let second: Promise<unknown> | undefined;
    const first = groups
      .join(businessId, async (trx) => {
        if (postgres()) await sql`insert into group_slow (n) values (1)`.execute(trx);
        // The next write asks once this group has run its members, while its COMMIT is on its way.
        setTimeout(() => {
          second = groups.join(businessId, async () => {
            order.push('second began');
          });
        }, 50);
      })
      .then(() => order.push('first committed'));
    await first;
    await new Promise((resolve) => setTimeout(resolve, 100));
    await second;
    // SQLite's driver runs one transaction at a time.
    assert.deepEqual(order, postgres() ? ['second began', 'first committed'] : ['first committed', 'second began']);
  });
});
