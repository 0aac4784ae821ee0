import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KyselyPlugin, RootOperationNode } from 'kysely';
import { createLineApplier, type LineDone } from '../../src/imports/apply.ts';
import { newId } from '../../src/lib/ids.ts';
import { createWriteRunner, SYSTEM, type WriteContext } from '../../src/write/runner.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { buyerLine as buyer, itemLine as item } from '../helpers/imports.ts';

/** Records the statements that read, as their trees (a read of the import's results names `import_results`). */
class Reads implements KyselyPlugin {
  readonly seen: string[] = [];
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (node.kind === 'SelectQueryNode') this.seen.push(JSON.stringify(node));
    return node;
  }
  async transformResult<T>({ result }: { result: T }): Promise<T> {
    return result;
  }
  readFrom(table: string): boolean {
    return this.seen.some((tree) => tree.includes(`"name":"${table}"`));
  }
}

const itemLine = (name: string, ref: string) => JSON.stringify(item(name, ref));
const buyerLine = (name: string, ref: string) => JSON.stringify(buyer(name, ref));

/**
 * The line applier of a run of an import (src/imports/apply.ts): what it remembers of earlier lines
 * by ref is what committed, and it reads the import's results only for what it cannot know.
 */
describeEachBackend('applying import lines', (ctx) => {
  const applierFor = (importId: string, fromStart: boolean) =>
    createLineApplier({
      importId,
      scopes: null,
      dryRun: false,
      stopOnError: false,
      fromStart,
      log: { warn: () => {} },
    });

  /** Applies `lines` (from line `first`) as one batch's write; `undo` throws after them, so nothing is kept. */
  async function batch(
    businessId: string,
    applier: ReturnType<typeof applierFor>,
    lines: string[],
    { first = 1, undo = false, reads }: { first?: number; undo?: boolean; reads?: Reads } = {},
  ): Promise<LineDone[]> {
    const db = reads ? ctx().db.withPlugin(reads) : ctx().db;
    const done: LineDone[] = [];
    const run = createWriteRunner(db).run({ businessId, actor: SYSTEM }, async (ctx: WriteContext) => {
      applier.begin();
      for (const [i, text] of lines.entries()) done.push(...(await applier.apply(ctx, first + i, text)));
      done.push(...(await applier.flush(ctx)));
      if (undo) throw new Error('undone');
    });
    if (undo) await assert.rejects(run, /undone/);
    else {
      await run;
      applier.committed();
    }
    return done;
  }

  it("stores a batch's held create lines together once it holds the lines the batch takes", async () => {
    const t = await ctx().createTenant();
    const applier = applierFor(newId('imp'), true);
    const lines = ['Tea', 'Coffee', 'Mate', 'Chai', 'Cocoa'].map((name) => itemLine(name, name.toLowerCase()));
    /** How many lines each call finished: a held line none, the line that fills a store the whole store. */
    const finished: number[] = [];
    await createWriteRunner(ctx().db).run({ businessId: t.businessId, actor: SYSTEM }, async (w: WriteContext) => {
      applier.begin(2);
      for (const [i, text] of lines.entries()) finished.push((await applier.apply(w, i + 1, text)).length);
      finished.push((await applier.flush(w)).length);
    });
    applier.committed();
    assert.deepEqual(finished, [0, 2, 0, 2, 0, 1]);
  });

  it('forgets the refs of a batch whose write was undone: the write runs again as if for the first time', async () => {
    // A group runs a joined write again when the one before it failed (src/write/groups.ts).
    const t = await ctx().createTenant();
    const applier = applierFor(newId('imp'), true);
    const lines = [itemLine('Tea', 'tea'), itemLine('Coffee', 'coffee')];
    await batch(t.businessId, applier, lines, { undo: true });
    const again = await batch(t.businessId, applier, lines);
    assert.deepEqual(
      again.map((d) => [d.result.line, d.result.outcome, 'error' in d.outcome ? d.outcome.error.message : null]),
      [
        [1, 'created', null],
        [2, 'created', null],
      ],
    );
  });

  it('checks held lines against the results only when the run did not see every earlier line', async () => {
    const t = await ctx().createTenant();
    // From the start: a ref an earlier batch of the run had fails without reading the results.
    const fromStart = applierFor(newId('imp'), true);
    await batch(t.businessId, fromStart, [itemLine('Tea', 'tea')]);
    const reads = new Reads();
    const second = await batch(
      t.businessId,
      fromStart,
      [
        itemLine('Green tea', 'tea'),
        itemLine('Mate', 'mate'),
        buyerLine('Tea house', 'tea'),
        buyerLine('Cafe', 'cafe'),
      ],
      { first: 2, reads },
    );
    assert.deepEqual(
      second.map((d) => [d.result.line, d.result.outcome]).sort(([a], [b]) => Number(a) - Number(b)),
      [
        [2, 'failed'],
        [3, 'created'],
        [4, 'failed'],
        [5, 'created'],
      ],
    );
    assert.equal(reads.readFrom('import_results'), false, reads.seen.join('\n'));
    assert.ok(reads.readFrom('items'), "the recorder sees the batch's reads");

    // Resumed (another instance did line 1): the results are read, and line 1's ref is found there.
    const importId = newId('imp');
    await ctx()
      .db.insertInto('import_results')
      .values({ import_id: importId, line: 1, ref: 'chai', outcome: 'created', record_id: null, detail: null })
      .execute();
    const resumed = applierFor(importId, false);
    const found = await batch(t.businessId, resumed, [itemLine('Chai', 'chai'), buyerLine('Chai house', 'chai')], {
      first: 2,
    });
    for (const line of found) {
      assert.equal(line.result.outcome, 'failed');
      assert.deepEqual((line.outcome as { error: { fieldErrors: unknown } }).error.fieldErrors, {
        ref: "Line 1 already has the ref 'chai'",
      });
    }
  });
});
