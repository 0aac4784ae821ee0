import type { Fixtures } from './fixtures.ts';
import { sampleRss } from './server.ts';

export interface EventMeasures {
  /** One GET /orders/export read to the end: records, records per second, the server's peak RSS meanwhile. */
  export: { records: number; seconds: number; recordsPerSecond: number; rssMb: number };
  /** A long poll at the end of the feed, woken by a PATCH: ms from the PATCH's answer to the poll's (median of `tries`). */
  wake: { p50Ms: number; tries: number };
}

export async function measureExport(base: string, f: Fixtures, pid: number): Promise<EventMeasures['export']> {
  const stopRss = sampleRss(pid, 50);
  const started = performance.now();
  const res = await fetch(`${base}/api/v1/orders/export`, { headers: f.headers });
  if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status}`);
  let records = 0;
  // Counted as it streams, never held: the client side stays flat too. indexOf scans in native code;
  // a byte-by-byte loop over ~4 GB cost the client (on the same cores as the server) more than the server.
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) records++;
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    records,
    seconds: Math.round(seconds * 100) / 100,
    recordsPerSecond: Math.round(records / seconds),
    rssMb: stopRss(),
  };
}

export async function measureWake(base: string, f: Fixtures, tries = 15): Promise<EventMeasures['wake']> {
  const json = { ...f.headers, 'content-type': 'application/json' };
  const waits: number[] = [];
  for (let i = 0; i < tries; i++) {
    const latest = Number(
      (await fetch(`${base}/api/v1/buyers/export`, { headers: f.headers })).headers.get('supplyline-event-sequence'),
    );
    const poll = fetch(`${base}/api/v1/events?after=${latest}&wait=10`, { headers: f.headers }).then(async (r) => {
      await r.arrayBuffer();
      return performance.now();
    });
    await new Promise((r) => setTimeout(r, 100));
    const target = f.patchTargets[i % f.patchTargets.length];
    const patch = await fetch(`${base}/api/v1/orders/${target.id}`, {
      method: 'PATCH',
      headers: json,
      body: JSON.stringify({ order: { notes: `wake ${i}` } }),
    });
    const answered = performance.now();
    await patch.arrayBuffer();
    waits.push(Math.max(0, (await poll) - answered));
  }
  waits.sort((a, b) => a - b);
  return { p50Ms: Math.round(waits[Math.floor(waits.length / 2)] * 10) / 10, tries };
}
