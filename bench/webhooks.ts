import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type autocannon from 'autocannon';
import type { Fixtures } from './fixtures.ts';
import { runLoad, warmUp, type LoadResult } from './load.ts';

export interface WebhookMeasures {
  /** A replay of the log's last events to a local receiver that answers 200 at once: deliveries per second from one instance. */
  throughput: { deliveries: number; seconds: number; perSecond: number };
  /** With the queue empty: ms from a PATCH's answer to its event arriving at the receiver (median and worst of `tries`). */
  latency: { p50Ms: number; maxMs: number; tries: number };
  /** The patch scenario alone, then while a replay is being delivered at full speed. */
  writes: { alone: LoadResult; whileDelivering: LoadResult; ratio: number };
}

/** A receiver on loopback that answers 200 at once and notes when each event arrived. */
async function startCountingReceiver() {
  const arrivals = new Map<string, number>();
  let count = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const sequence = /"sequence":(\d+)/.exec(Buffer.concat(chunks).toString('utf8'))?.[1];
      if (sequence) arrivals.set(sequence, performance.now());
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    get count() {
      return count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const waitFor = async (done: () => boolean, ms: number) => {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) throw new Error('webhook bench: deliveries did not arrive in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
};

/**
 * Webhook delivery measured against the running server (started with private networks allowed):
 * latency on an empty queue, deliveries per second from a replay of up to 20,000 events, and the
 * patch scenario's throughput alone and while a replay is being delivered.
 */
export async function measureWebhooks(
  base: string,
  f: Fixtures,
  patch: autocannon.Request[],
  options: { duration: number; connections: number },
): Promise<WebhookMeasures> {
  const json = { ...f.headers, 'content-type': 'application/json' };
  const receiver = await startCountingReceiver();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: json,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`webhook bench: ${method} ${path} answered ${res.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  };
  try {
    // Latency: one endpoint for order updates; each PATCH's event timed from the PATCH's answer.
    const live = await call('POST', '/webhook-endpoints', { url: receiver.url, eventTypes: ['order.updated'] });
    const waits: number[] = [];
    const tries = 30;
    for (let i = 0; i < tries; i++) {
      const target = f.patchTargets[i % f.patchTargets.length];
      const res = await fetch(`${base}/api/v1/orders/${target.id}`, {
        method: 'PATCH',
        headers: json,
        body: JSON.stringify({ order: { notes: `hook ${i}` } }),
      });
      const answered = performance.now();
      await res.arrayBuffer();
      const sequence = await call('GET', `/orders/${target.id}/events?limit=1000`).then((page) =>
        String(page.items.at(-1).sequence),
      );
      await waitFor(() => receiver.arrivals.has(sequence), 10_000);
      waits.push(Math.max(0, receiver.arrivals.get(sequence)! - answered));
    }
    await call('DELETE', `/webhook-endpoints/${live.id}`);
    waits.sort((a, b) => a - b);
    const latency = {
      p50Ms: Math.round(waits[Math.floor(tries / 2)] * 10) / 10,
      maxMs: Math.round(waits[tries - 1] * 10) / 10,
      tries,
    };

    // Throughput: a replay of the last events (every type) to a second endpoint.
    const latest = Number(
      (await fetch(`${base}/api/v1/buyers/export`, { headers: f.headers })).headers.get('supplyline-event-sequence'),
    );
    const from = Math.max(0, latest - 20_000);
    const bulk = await call('POST', '/webhook-endpoints', { url: receiver.url });
    const before = receiver.count;
    const started = performance.now();
    await call('POST', `/webhook-endpoints/${bulk.id}/replay`, { afterSequence: from, untilSequence: latest });
    await waitFor(() => receiver.count - before >= latest - from, 600_000);
    const seconds = (performance.now() - started) / 1000;
    const throughput = {
      deliveries: latest - from,
      seconds: Math.round(seconds * 100) / 100,
      perSecond: Math.round((latest - from) / seconds),
    };

    // Writes: the patch scenario alone, then while the same replay is delivered again.
    await warmUp(base, patch, options.connections);
    const alone = await runLoad(base, patch, options);
    await call('POST', `/webhook-endpoints/${bulk.id}/replay`, { afterSequence: from, untilSequence: latest });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const whileDelivering = await runLoad(base, patch, options);
    await call('DELETE', `/webhook-endpoints/${bulk.id}`);
    return {
      throughput,
      latency,
      writes: {
        alone,
        whileDelivering,
        ratio: Math.round((whileDelivering.requestsPerSecond / alone.requestsPerSecond) * 100) / 100,
      },
    };
  } finally {
    await receiver.close();
  }
}
