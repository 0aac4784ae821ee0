import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { sql } from 'kysely';
import { createStatisticsRefresh } from '../../src/db/statistics.ts';
import { describeEachBackend } from '../helpers/context.ts';

/** Counts the `ANALYZE` statements sent, and keeps the tables each named. */
class Analyses implements KyselyPlugin {
  count = 0;
  tables: string[][] = [];
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (node.kind === 'RawNode' && node.sqlFragments.join('').trim().startsWith('analyze')) {
      this.count++;
      this.tables.push(JSON.stringify(node.parameters).match(/(?<="name":")[a-z_]+/g) ?? []);
    }
    return node;
  }
  async transformResult<T>({ result }: { result: T }): Promise<T> {
    return result;
  }
}

/** A worker's refresh of the statistics of the tables it grows (src/db/statistics.ts). */
describeEachBackend('refreshing statistics', (ctx) => {
  it('analyses once enough rows have grown, at most once in the interval unless they doubled (PostgreSQL; SQLite: never)', async () => {
    const analyses = new Analyses();
    let now = 0;
    const statistics = createStatisticsRefresh({
      db: ctx().db.withPlugin(analyses),
      tables: ['items', 'events'],
      clock: () => now,
      after: 100,
      everyMs: 1000,
    });
    const expected = (n: number) => (ctx().backend === 'postgres' ? n : 0);
    /** [rows grown, the clock, the ANALYZEs run by then, why]: each step grows, refreshes if due, and counts. */
    const steps: Array<[number, number, number, string]> = [
      [99, 0, 0, 'not before 100 rows'],
      [1, 0, 1, 'at 100 rows'],
      [0, 0, 1, 'the count starts again'],
      [99, 500, 1, 'not twice within the interval'],
      [1, 500, 2, 'sooner when the rows grown have doubled (100 after 100)'],
      [199, 999, 2, 'not within the interval before they double again (199 after 200)'],
      [0, 1500, 3, 'the rows grown meanwhile, once the interval has passed'],
      [398, 1600, 3, '398 after 399: within the interval, not yet doubled'],
      [1, 1600, 4, '399 after 399: doubled'],
    ];
    for (const [rows, at, count, why] of steps) {
      statistics.grew(rows);
      now = at;
      await statistics.refreshIfDue();
      assert.equal(analyses.count, expected(count), why);
    }
  });

  it('analyses the tables named since the last refresh beside its own, each once, and then its own alone', async () => {
    const analyses = new Analyses();
    const statistics = createStatisticsRefresh({
      db: ctx().db.withPlugin(analyses),
      tables: ['events'],
      clock: () => 0,
      after: 10,
      everyMs: 0,
    });
    statistics.grew(6, ['items', 'item_variants']);
    statistics.grew(6, ['items', 'orders']);
    await statistics.refreshIfDue();
    statistics.grew(10);
    await statistics.refreshIfDue();
    const expected = [['events', 'items', 'item_variants', 'orders'], ['events']];
    assert.deepEqual(analyses.tables, ctx().backend === 'postgres' ? expected : []);
  });

  it('leaves a large table its statistics until it has grown by a tenth of the rows they counted', async () => {
    const analyses = new Analyses();
    if (ctx().backend === 'postgres') {
      await sql`create table statistics_probe (n integer)`.execute(ctx().db);
      await sql`insert into statistics_probe select n from generate_series(1, 20000) as n`.execute(ctx().db);
      await sql`analyze statistics_probe`.execute(ctx().db);
    }
    const statistics = createStatisticsRefresh({
      db: ctx().db.withPlugin(analyses),
      tables: [],
      clock: () => 0,
      after: 1,
      everyMs: 0,
    });
    /** [rows grown, the ANALYZEs run by then, why]. */
    const steps: Array<[number, number, string]> = [
      [1999, 0, '1,999 rows grown in a table of 20,000 counted'],
      [1, 1, '2,000 rows: a tenth'],
      [1999, 1, 'counted again from the refresh'],
    ];
    for (const [rows, count, why] of steps) {
      statistics.grew(rows, ['statistics_probe']);
      await statistics.refreshIfDue();
      assert.equal(analyses.count, ctx().backend === 'postgres' ? count : 0, why);
    }
  });
});
