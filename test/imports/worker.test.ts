import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { batchTime } from '../../src/imports/batch.ts';
import { createImportWorker } from '../../src/imports/worker.ts';
import { createWriteRunner, type WriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend } from '../helpers/context.ts';
import { itemLine, postImport } from '../helpers/imports.ts';

/**
 * An instance's import worker (src/imports/worker.ts) against another instance: a batch applies
 * only while this instance holds the import's lease.
 */
describeEachBackend(
  'the import worker',
  (ctx) => {
    /** A worker of its own for import `id` alone, running its batches through `writes`. */
    const workerFor = (id: string, writes: WriteRunner) =>
      createImportWorker({
        db: ctx().db,
        writes,
        clock: Date.now,
        concurrency: 1,
        leaseMs: 30_000,
        log: { warn: () => {} },
        only: id,
      });

    /** Runs import `id` with a worker of its own until it has completed, within `withinMs`. */
    const runToCompletion = async (id: string, withinMs: number) => {
      const worker = workerFor(id, createWriteRunner(ctx().db));
      worker.start();
      try {
        const deadline = Date.now() + withinMs;
        for (;;) {
          const imp = await ctx()
            .db.selectFrom('imports')
            .select('state')
            .where('id', '=', id)
            .executeTakeFirstOrThrow();
          if (imp.state === 'COMPLETED') return;
          assert.ok(Date.now() < deadline, `the import finished within ${withinMs} ms: ${imp.state}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await worker.stop();
      }
    };

    it('applies nothing once another instance has taken the import', async () => {
      const t = await ctx().createTenant();
      const id = await postImport(ctx(), t, [itemLine('Tea', 'tea'), itemLine('Coffee', 'coffee')]);

      // Just before each batch's write, another instance takes the import (its lease passed, say).
      const writes = createWriteRunner(ctx().db);
      let batches = 0;
      let settled!: () => void;
      const ran = new Promise<void>((resolve) => {
        settled = resolve;
      });
      const stealing: WriteRunner = {
        ...writes,
        run: async (scope, work) => {
          batches++;
          await ctx()
            .db.updateTable('imports')
            .set({ lease_owner: 'iw_other', lease_until: new Date(Date.now() + 60_000).toISOString() })
            .where('id', '=', id)
            .execute();
          try {
            return await writes.run(scope, work);
          } finally {
            settled();
          }
        },
      };
      const worker = workerFor(id, stealing);
      worker.start();
      // The worker's timers do not keep the process alive; this one does, and bounds the wait.
      let guard: NodeJS.Timeout | undefined;
      await Promise.race([
        ran,
        new Promise((_, reject) => {
          guard = setTimeout(() => reject(new Error('the worker ran no batch in 10 s')), 10_000);
        }),
      ]);
      clearTimeout(guard);
      await worker.stop();

      assert.equal(batches, 1);
      const imp = await ctx()
        .db.selectFrom('imports')
        .select(['lines_done', 'lease_owner', 'state'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        { ...imp, lines_done: Number(imp.lines_done) },
        { lines_done: 0, lease_owner: 'iw_other', state: 'RUNNING' },
      );
      const results = await ctx().db.selectFrom('import_results').select('line').where('import_id', '=', id).execute();
      assert.deepEqual(results, []);
      const items = await ctx().db.selectFrom('items').select('id').where('business_id', '=', t.businessId).execute();
      assert.deepEqual(items, []);
    });

    it('asks before each batch whether requests arrive, and takes half the time while they do', async () => {
      const t = await ctx().createTenant();
      const id = await postImport(
        ctx(),
        t,
        Array.from({ length: 30 }, (_, i) => itemLine(`Item ${i}`, `i${i}`)),
      );
      const writes = createWriteRunner(ctx().db);
      let batches = 0;
      let asked = 0;
      const counting: WriteRunner = {
        ...writes,
        run: (scope, work) => {
          batches++;
          return writes.run(scope, work);
        },
      };
      const worker = createImportWorker({
        db: ctx().db,
        writes: counting,
        clock: Date.now,
        concurrency: 1,
        leaseMs: 30_000,
        log: { warn: () => {} },
        only: id,
        requestsArrive: () => {
          asked++;
          return true;
        },
      });
      worker.start();
      try {
        const deadline = Date.now() + 20_000;
        while (
          (await ctx().db.selectFrom('imports').select('state').where('id', '=', id).executeTakeFirstOrThrow())
            .state !== 'COMPLETED'
        ) {
          assert.ok(Date.now() < deadline, 'the import finished within 20 s');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await worker.stop();
      }
      assert.ok(batches >= 1);
      assert.equal(asked, batches);
      assert.deepEqual(
        [batchTime(ctx().db, false), batchTime(ctx().db, true)],
        ctx().backend === 'sqlite' ? [10, 2.5] : [24, 6],
      );
    });

    it("checks a resumed import's lines against the results of the lines done before it", async () => {
      const t = await ctx().createTenant();
      const id = await postImport(ctx(), t, [itemLine('Tea', 'tea'), itemLine('Green tea', 'tea')]);
      // Another instance did line 1 and stopped (its lease passed): its result is stored, its ref with it.
      await ctx()
        .db.updateTable('imports')
        .set({
          lines_done: 1,
          state: 'RUNNING',
          counts: JSON.stringify({ created: 1, updated: 0, unchanged: 0, failed: 0 }),
        })
        .where('id', '=', id)
        .execute();
      await ctx()
        .db.insertInto('import_results')
        .values({ import_id: id, line: 1, ref: 'tea', outcome: 'created', record_id: null, detail: null })
        .execute();

      await runToCompletion(id, 10_000);

      const line2 = await ctx()
        .db.selectFrom('import_results')
        .select(['outcome', 'detail'])
        .where('import_id', '=', id)
        .where('line', '=', 2)
        .executeTakeFirstOrThrow();
      assert.equal(line2.outcome, 'failed');
      assert.match(String(line2.detail), /Line 1 already has the ref 'tea'/);
    });

    it('refreshes the statistics of the tables it grows once it has applied 200 lines, and of no other (PostgreSQL)', async () => {
      const t = await ctx().createTenant();
      // Statistics as a new database has them: none (reltuples -1 until a table is analysed).
      const reltuples = async () =>
        ctx().backend === 'postgres'
          ? Number(
              (
                await sql<{ n: number }>`select reltuples as n from pg_class where oid = 'items'::regclass`.execute(
                  ctx().db,
                )
              ).rows[0].n,
            )
          : null;
      /** How many times `ANALYZE` ran on each table (autovacuum's own are counted apart). */
      const analyses = async () =>
        ctx().backend === 'postgres'
          ? Object.fromEntries(
              (
                await sql<{ relname: string; n: string }>`select relname, analyze_count as n from pg_stat_user_tables
                  where relname in ('items', 'item_variants', 'orders', 'order_items', 'shipments')`.execute(ctx().db)
              ).rows.map((r) => [r.relname, Number(r.n)]),
            )
          : {};
      const before = await reltuples();
      const analysedBefore = await analyses();
      const id = await postImport(
        ctx(),
        t,
        Array.from({ length: 201 }, (_, i) => itemLine(`Item ${i}`, `i${i}`)),
      );
      await runToCompletion(id, 60_000);
      if (ctx().backend === 'postgres') {
        assert.ok(before! < 200, `no statistics of 200 items before: ${before}`);
        assert.ok((await reltuples())! >= 200, 'ANALYZE counted the imported items');
        // Item lines grow the items' tables; the orders' tables, which no line wrote, keep their statistics.
        const analysed = await analyses();
        const more = Object.fromEntries(Object.entries(analysed).map(([t, n]) => [t, n > analysedBefore[t]]));
        assert.deepEqual(more, {
          items: true,
          item_variants: true,
          orders: false,
          order_items: false,
          shipments: false,
        });
      }
    });
  },
  { config: { imports: { ...loadConfig({}).imports, concurrency: 0 } } },
);
