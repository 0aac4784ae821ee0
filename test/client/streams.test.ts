// The feed and the exports against a scripted server: a poll cut mid-body is asked again from the
// same place, and an export of 300,000 orders (19 MB, over twice the heap bound the test sets) is
// read in constant memory.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  createSupplylineClient,
  SupplylineConnectionError,
  SupplylineError,
  type SupplylineEvent,
} from '../../clients/typescript/src/index.ts';
import { cutBody, json, scriptedServer } from './scripted-server.ts';

const tenant = { businessId: 'bus_1', apiKey: 'sl_live_x' };
const event = (sequence: number) => ({
  id: `evt_${sequence}`,
  sequence,
  type: 'order.updated',
  resourceType: 'order',
  resourceId: 'ord_1',
  resourceVersion: sequence,
  occurredAt: '2030-01-01T00:00:00.000Z',
  actor: { type: 'api_key', id: 'key_1', name: null },
  requestId: null,
  idempotencyKey: null,
  data: { object: { id: 'ord_1', notes: `note ${sequence}` } },
});

describe('events.follow', () => {
  it('survives polls cut mid-body, and resumes each from its last checkpoint', async () => {
    // after=0: cut, then 1..3; after=3: cut, then 4..5; after=5: empty pages until stopped.
    const answers = new Map<string, Array<'cut' | number[]>>([
      ['0', ['cut', [1, 2, 3]]],
      ['3', ['cut', [4, 5]]],
    ]);
    const server = await scriptedServer((req, res) => {
      const from = new URL(req.url!, 'http://x').searchParams.get('after')!;
      const next = answers.get(from)?.shift() ?? [];
      const page = {
        items: next === 'cut' ? [] : next.map(event),
        lastSequence: next === 'cut' ? 0 : Math.max(Number(from), ...next),
        hasMore: false,
      };
      if (next === 'cut') return cutBody(res, { ...page, items: [event(1), event(2)] });
      json(res, 200, page);
    });
    try {
      const client = createSupplylineClient({ baseUrl: server.base, ...tenant, retry: { baseDelayMs: 5 } });
      const stop = new AbortController();
      const seen: SupplylineEvent[] = [];
      const checkpoints: number[] = [];
      for await (const e of client.events.follow({
        after: 0,
        waitSeconds: 1,
        signal: stop.signal,
        onCheckpoint: (s) => {
          checkpoints.push(s);
          if (s === 5) stop.abort();
        },
      })) {
        seen.push(e);
        if (e.type === 'order.updated') assert.equal(typeof e.data.object.id, 'string');
      }
      assert.deepEqual(
        seen.map((e) => e.sequence),
        [1, 2, 3, 4, 5],
        'each event once, in order',
      );
      assert.deepEqual(checkpoints, [3, 5]);
      const polls = server.seen.map((s) => new URL(s.url, 'http://x').searchParams.get('after'));
      assert.deepEqual(polls, ['0', '0', '3', '3'], 'a cut poll was asked again from the same place');
    } finally {
      await server.close();
    }
  });
});

describe('orders.export', () => {
  it('reads 300,000 orders as NDJSON in constant memory', async () => {
    const total = 300_000;
    const line = (i: number) => `{"id":"ord_${String(i).padStart(26, '0')}","totalAmount":"${i}.00"}\n`;
    // Live memory, not garbage waiting for a collection: measured after one.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const server = await scriptedServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'supplyline-event-sequence': '77' });
      // Written as the client reads it, so that neither side holds the whole body.
      for (let i = 0; i < total; ) {
        let chunk = '';
        for (const end = Math.min(total, i + 500); i < end; i++) chunk += line(i);
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    });
    try {
      const client = createSupplylineClient({ baseUrl: server.base, ...tenant });
      gc();
      const baseline = process.memoryUsage().heapUsed;
      let peak = 0;
      let count = 0;
      let sum = 0;
      const snapshot = await client.orders.export();
      assert.equal(snapshot.sequence, 77);
      for await (const order of snapshot) {
        if (order.id !== `ord_${String(count).padStart(26, '0')}`) assert.fail(`order ${count} was ${order.id}`);
        sum += Number(order.totalAmount);
        if (++count % 50_000 === 0) {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed - baseline);
        }
      }
      assert.equal(count, total);
      assert.equal(sum, (total * (total - 1)) / 2);
      const bodyBytes = total * line(total - 1).length;
      // A client holding the body (19 MB as a string, more as 300,000 objects) would exceed it.
      assert.ok(
        peak < 8 * 1024 * 1024,
        `heap grew by ${Math.round(peak / 1048576)} MB over a ${Math.round(bodyBytes / 1048576)} MB export`,
      );
      console.log(
        `# export: ${total} orders, ${Math.round(bodyBytes / 1048576)} MB, heap growth at most ${Math.round(peak / 1048576)} MB`,
      );
    } finally {
      await server.close();
    }
  });

  it('stops the body when the reader stops early', async () => {
    let closed = false;
    const server = await scriptedServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'supplyline-event-sequence': '1' });
      res.on('close', () => {
        closed = true;
      });
      for (let i = 0; i < 100_000 && !closed; i++)
        if (!res.write(`{"id":"ord_${i}"}\n`)) await new Promise((r) => res.once('drain', r));
      res.end();
    });
    try {
      const client = createSupplylineClient({ baseUrl: server.base, ...tenant });
      let n = 0;
      for await (const _ of await client.orders.export()) if (++n === 10) break;
      for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(closed, 'the connection was closed');
    } finally {
      await server.close();
    }
  });

  it('throws a SupplylineConnectionError when an export is cut mid-body', async () => {
    const server = await scriptedServer(async (req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'supplyline-event-sequence': '1' });
      res.write('{"id":"ord_1"}\n{"id":"ord_');
      setTimeout(() => req.socket.destroy(), 50);
    });
    try {
      const client = createSupplylineClient({ baseUrl: server.base, ...tenant });
      const seen: string[] = [];
      await assert.rejects(
        async () => {
          for await (const order of await client.orders.export()) seen.push(order.id);
        },
        (error: unknown) => error instanceof SupplylineConnectionError && error instanceof SupplylineError,
      );
      assert.deepEqual(seen, ['ord_1']);
    } finally {
      await server.close();
    }
  });
});
