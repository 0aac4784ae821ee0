import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextStoreLines } from '../../src/imports/apply.ts';
import { batchFull } from '../../src/imports/worker.ts';

describe('the size of a store of held import lines', () => {
  /** A store's time: `fixed` ms of round trips, and `perLine` ms a line. */
  const sizes = (start: number, fixed: number, perLine: number, stores = 20) => {
    const seen = [start];
    for (let i = 1; i < stores; i++) {
      const lines = seen[i - 1];
      seen.push(nextStoreLines(lines, fixed + perLine * lines, 5));
    }
    return seen;
  };

  it('grows from one line when a store of one took over half the time, to what fits', () => {
    // 2.6 ms a store and 0.35 ms a line: 6 lines take 4.7 ms, 7 take 5.05 ms.
    const seen = sizes(1, 2.6, 0.35);
    assert.ok(
      seen.slice(-4).every((n) => n === 6 || n === 7),
      seen.join(' '),
    );
  });

  it('shrinks after a slow store, and grows back', () => {
    assert.equal(nextStoreLines(20, 12, 5), 8);
    assert.equal(nextStoreLines(1, 9, 5), 1);
    assert.deepEqual(sizes(1, 1, 0.05).at(-1), 80);
  });

  it('stays within one line and the most a store takes', () => {
    assert.equal(nextStoreLines(100, 0.5, 5), 100);
    assert.equal(nextStoreLines(3, 100, 5), 1);
  });
});

describe('the end of an import batch', () => {
  it('comes after its first store of held lines, its time, or its most lines, whichever is first', () => {
    assert.equal(batchFull(3, 1, 0), false);
    assert.equal(batchFull(3, 1, 1), true);
    assert.equal(batchFull(3, 5, 0), true);
    assert.equal(batchFull(200, 1, 0), true);
  });
});
