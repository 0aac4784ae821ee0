// The client's `consistency: 'after-my-writes'`: it remembers the latest Supplyline-Position an answer
// carried and sends it as Consistent-After on reads, never on writes; `any` sends nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSupplylineClient, type Consistency } from '../../clients/typescript/src/index.ts';

const buyer = { id: 'phm_1', name: 'Acme' };

function recording(positions: Array<string | null>) {
  const sent: Array<{ method: string; after: string | null }> = [];
  const fetch = async (request: Request) => {
    sent.push({ method: request.method, after: request.headers.get('consistent-after') });
    const position = positions.shift() ?? null;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (position) headers['supplyline-position'] = position;
    return new Response(JSON.stringify(buyer), { status: request.method === 'POST' ? 201 : 200, headers });
  };
  return { sent, fetch };
}

describe('@supplyline/client consistency', () => {
  it("sends the latest position seen as Consistent-After on reads with 'after-my-writes'", async () => {
    const { sent, fetch } = recording([null, '0/16B3740', '0/16B3000', 'not-a-position', '1/0']);
    const consistency: Consistency = 'after-my-writes';
    const client = createSupplylineClient({
      baseUrl: 'http://server',
      businessId: 'b',
      apiKey: 'k',
      fetch,
      consistency,
    });
    assert.equal(client.position(), null);
    await client.buyers.get('phm_1'); // nothing seen yet: no header
    await client.buyers.create({ buyer: { name: 'Acme' } }); // a write: never sends one; answers 0/16B3740
    await client.buyers.get('phm_1'); // answers an older 0/16B3000, which does not replace the later one
    await client.buyers.get('phm_1');
    await client.buyers.get('phm_1', { consistency: 'any' });
    assert.equal(client.position(), '1/0');
    await client.buyers.get('phm_1');
    assert.deepEqual(sent, [
      { method: 'GET', after: null },
      { method: 'POST', after: null },
      { method: 'GET', after: '0/16B3740' },
      { method: 'GET', after: '0/16B3740' },
      { method: 'GET', after: null },
      { method: 'GET', after: '1/0' },
    ]);
  });

  it("sends nothing by default, and honours a call's own 'after-my-writes'", async () => {
    const { sent, fetch } = recording(['0/10', '0/20', '0/30']);
    const client = createSupplylineClient({ baseUrl: 'http://server', businessId: 'b', apiKey: 'k', fetch });
    await client.buyers.get('phm_1');
    await client.buyers.get('phm_1');
    await client.buyers.get('phm_1', { consistency: 'after-my-writes' });
    assert.deepEqual(
      sent.map((s) => s.after),
      [null, null, '0/20'],
    );
  });
});
