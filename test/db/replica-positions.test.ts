import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatPosition, parsePosition, SharedQuery } from '../../src/db/replicas/position.ts';
import { parseConsistentAfter } from '../../src/http/read-routing.ts';

describe('WAL positions (src/db/replicas)', () => {
  it('reads and writes PostgreSQL pg_lsn text, ordered as numbers', () => {
    assert.equal(parsePosition('0/0'), 0n);
    assert.equal(parsePosition('16/B374D848'), (0x16n << 32n) + 0xb374d848n);
    assert.equal(formatPosition(parsePosition('16/B374D848')!), '16/B374D848');
    assert.equal(formatPosition(parsePosition('ffffffff/ffffffff')!), 'FFFFFFFF/FFFFFFFF');
    // Compared as text "9/0" would sort after "10/0".
    assert.ok(parsePosition('10/0')! > parsePosition('9/FFFFFFFF')!);
    for (const bad of ['', '16', '/1', '1/', '1/2/3', 'G/0', '123456789/0', '0/123456789', ' 0/1', '0x1/2'])
      assert.equal(parsePosition(bad), null, bad);
  });

  it('takes Consistent-After as an event sequence or a position, and nothing else', () => {
    assert.equal(parseConsistentAfter('42'), null);
    assert.equal(parseConsistentAfter('0/16B3740'), 0x16b3740n);
    for (const bad of ['', '-1', '1.5', 'yesterday', '0/16B3740 ', '12345678901234567', 'FFFFFFFFF/0'])
      assert.equal(parseConsistentAfter(bad), undefined, bad);
  });

  it('shares one query among the callers of one turn, sent after each of them asked', async () => {
    const sentAt: number[] = [];
    let asked = 0;
    let value = 0;
    const shared = new SharedQuery(async () => {
      sentAt.push(asked);
      return ++value;
    });
    const first = [shared.get(), shared.get(), shared.get()];
    asked = 3;
    assert.deepEqual(await Promise.all(first), [1, 1, 1]);
    // Everyone who asked before the query went out is covered by it.
    assert.deepEqual(sentAt, [3]);
    // A caller after that gets a query of its own, never the earlier answer.
    asked = 4;
    assert.equal(await shared.get(), 2);
    assert.deepEqual(sentAt, [3, 4]);
    assert.equal(shared.sent, 2);
  });

  it('passes a failed query to every caller that shared it, and tries afresh for the next', async () => {
    let fail = true;
    const shared = new SharedQuery(async () => {
      if (fail) throw new Error('gone');
      return 'ok';
    });
    const results = await Promise.allSettled([shared.get(), shared.get()]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    fail = false;
    assert.equal(await shared.get(), 'ok');
  });
});
