import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchFull, nextBatchLines } from '../../src/imports/batch.ts';

describe('the size of an import batch', () => {
  /** A batch's time from its first line to its COMMIT: `fixed` ms of round trips and COMMIT, and `perLine` ms a line. */
  const sizes = (start: number, fixed: number, perLine: number, batches = 20) => {
    const seen = [start];
    for (let i = 1; i < batches; i++) {
      const lines = seen[i - 1];
      seen.push(nextBatchLines(lines, fixed + perLine * lines, 5));
    }
    return seen;
  };

  it('grows from one line when a batch of one took over half the time, to what fits', () => {
    // 2.6 ms a batch and 0.35 ms a line: 6 lines take 4.7 ms, 7 take 5.05 ms.
    const seen = sizes(1, 2.6, 0.35);
    assert.ok(
      seen.slice(-4).every((n) => n === 6 || n === 7),
      seen.join(' '),
    );
  });

  it('takes the time it is given: 12 ms fit twice the lines of 6 ms', () => {
    assert.equal(nextBatchLines(10, 6, 12), 20);
  });

  it('counts the whole batch: lines that take 0.1 ms each beside 3 ms of round trips fit 20 lines, not 50', () => {
    const seen = sizes(8, 3, 0.1);
    assert.ok(
      seen.slice(-4).every((n) => n >= 19 && n <= 21),
      seen.join(' '),
    );
  });

  it('shrinks after a slow batch, to no fewer than half its lines, and grows back', () => {
    assert.equal(nextBatchLines(20, 8, 5), 12);
    assert.equal(nextBatchLines(20, 40, 5), 10);
    assert.equal(nextBatchLines(1, 9, 5), 1);
    assert.deepEqual(sizes(1, 1, 0.02).at(-1), 200);
  });

  it('stays within one line and the most a batch takes', () => {
    assert.equal(nextBatchLines(200, 0.5, 5), 200);
    assert.equal(nextBatchLines(2, 100, 5), 1);
  });
});

describe('the end of an import batch', () => {
  it('comes after the lines it takes, or its time, whichever is first', () => {
    assert.equal(batchFull(3, 1, 4, 5), false);
    assert.equal(batchFull(4, 1, 4, 5), true);
    assert.equal(batchFull(3, 5, 4, 5), true);
    assert.equal(batchFull(3, 5, 4, 12), false);
  });
});
