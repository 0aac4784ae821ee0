import autocannon from 'autocannon';

type Request = autocannon.Request;

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
  statusCodes: Record<string, number>;
}

/** One autocannon run; errors are non-2xx answers plus socket errors and timeouts. */
export async function runLoad(
  url: string,
  requests: Request[],
  options: { duration: number; connections: number },
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    requests,
    duration: options.duration,
    connections: options.connections,
    timeout: 60,
  });
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, (s as { count?: number }).count ?? 0]),
  );
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    requests: result.requests.total,
    statusCodes,
  };
}

/** A fixed number of requests, waited for to the last: warms up without leaving requests in flight. */
export async function warmUp(url: string, requests: Request[], connections: number): Promise<void> {
  await autocannon({ url, requests, amount: connections * 2, connections, timeout: 60 });
}
