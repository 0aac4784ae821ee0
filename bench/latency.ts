/** Timing one request at a time against a running server (bench/lists.ts, bench/list-changes.ts). */

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const round = (ms: number) => Math.round(ms * 10) / 10;

export async function timed(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ ms: number; body: any }> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 200)}`);
  return { ms, body: JSON.parse(text) };
}

/** `requests` requests of the case, one at a time, after one that warms the connection. */
export async function measure(
  base: string,
  headers: Record<string, string>,
  path: () => string,
  requests: number,
): Promise<{ p50: number; p99: number; max: number }> {
  await timed(base, path(), headers);
  const times: number[] = [];
  for (let i = 0; i < requests; i++) times.push((await timed(base, path(), headers)).ms);
  times.sort((a, b) => a - b);
  return {
    p50: round(percentile(times, 0.5)),
    p99: round(percentile(times, 0.99)),
    max: round(times[times.length - 1]),
  };
}

export const randomIn = (low: number, high: number) => low + Math.floor(Math.random() * Math.max(1, high - low + 1));
