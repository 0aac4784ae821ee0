import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { createStatisticsRefresh } from '../../src/db/statistics.ts';
import { describeEachBackend } from '../helpers/context.ts';

/** Counts the `ANALYZE` statements sent. */
class Analyses implements KyselyPlugin {
  count = 0;
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (node.kind === 'RawNode' && node.sqlFragments.join('').trim().startsWith('analyze')) this.count++;
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

    statistics.grew(99);
    await statistics.refreshIfDue();
    assert.equal(analyses.count, 0, 'not before 100 rows');
    statistics.grew(1);
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(1), 'at 100 rows');
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(1), 'the count starts again');

    statistics.grew(99);
    now = 500;
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(1), 'not twice within the interval');
    statistics.grew(1);
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(2), 'sooner when the rows grown have doubled (100 after 100)');
    statistics.grew(199);
    now = 999;
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(2), 'not within the interval before they double again (199 after 200)');
    now = 1500;
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(3), 'the rows grown meanwhile, once the interval has passed');
    statistics.grew(398);
    now = 1600;
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(3), '398 after 399: within the interval, not yet doubled');
    statistics.grew(1);
    await statistics.refreshIfDue();
    assert.equal(analyses.count, expected(4), '399 after 399: doubled');
  });
});
