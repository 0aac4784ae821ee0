import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTurnGate } from '../../src/http/turns.ts';

/** A gate whose turns the test runs by hand. */
function manualGate(perTurn: number) {
  const pending: Array<() => void> = [];
  const gate = createTurnGate(perTurn, (next) => pending.push(next));
  return {
    gate,
    scheduled: () => pending.length,
    endTurn() {
      const due = pending.splice(0);
      for (const next of due) next();
    },
  };
}

describe('The turn gate (src/http/turns.ts)', () => {
  it('starts at most perTurn requests a turn, and the rest in later turns in arrival order', () => {
    const { gate, endTurn } = manualGate(3);
    const ran: number[] = [];
    for (let i = 1; i <= 8; i++) gate.admit(() => ran.push(i));
    assert.deepEqual(ran, [1, 2, 3]);
    assert.equal(gate.waiting, 5);
    endTurn();
    assert.deepEqual(ran, [1, 2, 3, 4, 5, 6]);
    // Requests read in the next poll phase count against the room the released ones took.
    gate.admit(() => ran.push(9));
    assert.deepEqual(ran, [1, 2, 3, 4, 5, 6]);
    endTurn();
    assert.deepEqual(ran, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(gate.waiting, 0);
  });

  it('lets a newcomer pass only behind those already waiting', () => {
    const { gate, endTurn } = manualGate(2);
    const ran: string[] = [];
    for (const name of ['a', 'b', 'c']) gate.admit(() => ran.push(name));
    assert.deepEqual(ran, ['a', 'b']);
    endTurn();
    assert.deepEqual(ran, ['a', 'b', 'c']);
    // This turn has room for one more (c took one): d runs at once, e waits.
    gate.admit(() => ran.push('d'));
    gate.admit(() => ran.push('e'));
    assert.deepEqual(ran, ['a', 'b', 'c', 'd']);
    endTurn();
    assert.deepEqual(ran, ['a', 'b', 'c', 'd', 'e']);
  });

  it('schedules nothing once idle, so an idle server does not spin', () => {
    const { gate, scheduled, endTurn } = manualGate(4);
    assert.equal(scheduled(), 0);
    gate.admit(() => {});
    assert.equal(scheduled(), 1);
    gate.admit(() => {});
    assert.equal(scheduled(), 1, 'one turn scheduled, however many requests');
    endTurn();
    assert.equal(scheduled(), 0, 'nothing started in that turn: nothing more is scheduled');
  });

  it('runs on the real event loop: a burst of 50 is started within a few turns, all of it', async () => {
    const gate = createTurnGate(8);
    const started: number[] = [];
    const done = Promise.all(
      Array.from(
        { length: 50 },
        (_, i) =>
          new Promise<void>((resolve) =>
            gate.admit(() => {
              started.push(i);
              resolve();
            }),
          ),
      ),
    );
    assert.equal(started.length, 8);
    await done;
    assert.deepEqual(
      started,
      Array.from({ length: 50 }, (_, i) => i),
    );
    assert.equal(gate.waiting, 0);
  });
});
