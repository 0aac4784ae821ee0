import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { sendWrite } from '../../src/db/pipeline.ts';
import { runPart } from '../../src/write/part.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import { describeEachBackend } from '../helpers/context.ts';

/** A part of a write (src/write/part.ts) fails, or is undone, on its own; the write goes on. */
describeEachBackend('a part of a write', (ctx) => {
  let businessId: string;
  before(async () => {
    businessId = (await ctx().createTenant()).businessId;
    await sql`create table part_rows (n integer not null)`.execute(ctx().db);
  });
  const stored = async () =>
    (await sql<{ n: number }>`select n from part_rows order by n`.execute(ctx().db)).rows.map((r) => Number(r.n));

  it('fails alone, with its own error, when a write it sent ahead fails, and the parts after it are kept', async () => {
    const outcomes = await createWriteRunner(ctx().db).run({ businessId, actor: SYSTEM }, async (c) => {
      const results: string[] = [];
      for (const n of [1, 2, 3]) {
        await runPart(c, async (p) => {
          await sql`insert into part_rows (n) values (${n * 10})`.execute(p.trx);
          // Not null: the second part's last statement fails.
          await sendWrite(p.trx, n === 2 ? sql`insert into part_rows (n) values (null)` : sql`select 1`);
        }).then(
          () => results.push('kept'),
          (error: Error) => results.push(error.message),
        );
      }
      return results;
    });
    assert.equal(outcomes[0], 'kept');
    assert.match(outcomes[1], /not[ -]null/i);
    assert.equal(outcomes[2], 'kept');
    assert.deepEqual(await stored(), [10, 30]);
  });
});
