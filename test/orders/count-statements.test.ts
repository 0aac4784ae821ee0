import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createDatabase, type DatabaseHandle } from '../../src/db/connection.ts';
import { changeCounts } from '../../src/orders/read-model/change-counts.ts';
import { bumpCounts, orderCounts } from '../../src/orders/read-model/counts.ts';
import { createdCounts } from '../../src/orders/read-model/created-counts.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { runPart } from '../../src/write/part.ts';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * A write's count tables are bumped in one statement on PostgreSQL (decision 0069), each table as
 * its own upsert would: netted per key, added to what is there.
 */
describeEachBackend('count upserts', (ctx) => {
  let own: DatabaseHandle | undefined;
  before(() => {
    if (ctx().backend === 'postgres') own = createDatabase(ctx().database.url, { schema: ctx().database.schema });
  });
  after(() => own?.close());

  /** The statements `bumps` took on PostgreSQL (0 on SQLite), in a transaction of their own. */
  async function bumped(businessId: string, bumps: Parameters<typeof bumpCounts>[2]): Promise<number> {
    const statements = () => own?.poolStats?.().statements ?? 0;
    const start = statements();
    await (own?.db ?? ctx().db).transaction().execute((trx) => bumpCounts(trx, businessId, bumps));
    return statements() - start;
  }

  const sums = async (businessId: string) => {
    const sum = async (table: 'order_counts' | 'order_change_counts' | 'order_created_counts', key: string[]) => {
      const rows = await ctx()
        .db.selectFrom(table)
        .select([...(key as never[]), (eb) => eb.fn.sum<number | string>('n').as('n')])
        .where('business_id', '=', businessId)
        .groupBy(key as never[])
        .execute();
      return rows
        .map((r) => [...key.map((k) => String((r as Record<string, unknown>)[k])), Number(r.n)])
        .filter((r) => r.at(-1) !== 0)
        .sort();
    };
    return {
      counts: await sum('order_counts', ['phase', 'status']),
      changed: await sum('order_change_counts', ['day', 'created_day']),
      created: await sum('order_created_counts', ['day', 'phase', 'status']),
    };
  };

  it('bumps three tables in the statements one table takes, each netted per key and added to what is there', async (t) => {
    const { businessId } = await ctx().createTenant();
    const one = await bumped(businessId, [
      orderCounts([{ phase: 'PENDING', status: 'DRAFT', delta: 1 }]),
      changeCounts([]),
    ]);
    const three = await bumped(businessId, [
      orderCounts([
        { phase: 'PENDING', status: 'DRAFT', delta: -1 },
        { phase: 'ACTIVE', status: 'ACCEPTED', delta: 2 },
        { phase: 'ACTIVE', status: 'ACCEPTED', delta: 1 },
      ]),
      changeCounts([{ day: '2026-12-05', created_day: '2026-12-01', delta: 1 }]),
      createdCounts([
        { day: '2026-12-01', phase: 'ACTIVE', status: 'ACCEPTED', delta: 1 },
        // Cancels out: writes nothing.
        { day: '2026-12-02', phase: 'PENDING', status: 'DRAFT', delta: 1 },
        { day: '2026-12-02', phase: 'PENDING', status: 'DRAFT', delta: -1 },
      ]),
    ]);
    assert.deepEqual(await sums(businessId), {
      counts: [['ACTIVE', 'ACCEPTED', 3]],
      changed: [['2026-12-05', '2026-12-01', 1]],
      created: [['2026-12-01', 'ACTIVE', 'ACCEPTED', 1]],
    });
    if (!own) return t.diagnostic('SQLite runs each statement in the process');
    assert.equal(three, one, `statements: ${three} for three tables, ${one} for one`);
  });

  it('a group of writes bumps the counts of the writes it keeps once, netted, before its COMMIT', async (t) => {
    const { businessId } = await ctx().createTenant();
    const runner = createWriteRunner(own?.db ?? ctx().db);
    const statements = () => own?.poolStats?.().statements ?? 0;
    const draft = (delta: number) => [orderCounts([{ phase: 'PENDING', status: 'DRAFT', delta }])];
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    /** Six writes that wait for each other (one group on PostgreSQL); the fourth is refused. */
    const six = (bump: boolean) =>
      Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          runner.run({ businessId, actor: SYSTEM }, async (c) => {
            if (bump) await bumpCounts(c.trx, businessId, draft(1));
            // A part of the write that is undone takes its bumps with it.
            if (bump && i === 1)
              await runPart(c, async (part) => {
                await bumpCounts(part.trx, businessId, draft(100));
                throw new Error('the part is refused');
              }).catch(() => {});
            await turn();
            if (i === 3) throw new Error('refused');
          }),
        ),
      );
    const start = statements();
    await six(false);
    const without = statements() - start;
    await six(true);
    const withBumps = statements() - start - without;
    assert.deepEqual((await sums(businessId)).counts, [['PENDING', 'DRAFT', 5]]);
    if (!own) return t.diagnostic('SQLite runs each statement in the process');
    // The undone part's savepoint, its rollback and release, and one statement for the counts of all (two groups at most).
    assert.ok(withBumps - without <= 5, `the bumps took ${withBumps - without} statements more`);
  });
});
