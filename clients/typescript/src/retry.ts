export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** First backoff in ms, doubled per attempt, with full jitter (default 200). */
  baseDelayMs?: number;
  /** Longest single wait in ms (default 10 000); a Retry-After asking for longer is not retried but returned. */
  maxDelayMs?: number;
  /** The whole call, attempts and waits, ends within this many ms (default 30 000): no retry starts that would pass it, and an attempt is cut off at it. */
  totalTimeoutMs?: number;
  /** Whether an attempt is cut off when the total time runs out (default true; off for streams such as exports, whose body may take longer). */
  cutOff?: boolean;
}

const sleep = (ms: number, signal?: AbortSignal | null) => new Promise<void>((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
  const onAbort = () => { clearTimeout(timer); reject(signal!.reason); };
  signal?.addEventListener('abort', onAbort, { once: true });
});

/** Seconds or an HTTP date, as milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

async function retryable(response: Response): Promise<boolean> {
  if (response.status === 429 || response.status === 503) return true;
  if (response.status !== 409) return false;
  const body = await response.clone().json().catch(() => null) as { errorCode?: string } | null;
  return body?.errorCode === 'IDEMPOTENCY_KEY_IN_USE';
}

const WRITES = new Set(['POST', 'PATCH']);

/**
 * A fetch that gives every POST and PATCH one Idempotency-Key (unless the caller set one) and retries
 * network errors, 429 (after Retry-After), 503 and 409 IDEMPOTENCY_KEY_IN_USE with the same key, with
 * exponential backoff and full jitter, within a bounded total time. Other answers return at once.
 */
export function retryingFetch(base: typeof fetch, options: RetryOptions = {}): typeof fetch {
  const { maxAttempts = 5, baseDelayMs = 200, maxDelayMs = 10_000, totalTimeoutMs = 30_000, cutOff = true } = options;
  return async (input, init) => {
    const first = new Request(input, init);
    const headers = new Headers(first.headers);
    if (WRITES.has(first.method) && !headers.has('idempotency-key')) headers.set('Idempotency-Key', crypto.randomUUID());
    const body = first.body ? await first.arrayBuffer() : undefined;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      // Each attempt gets what is left of the total time, so a server that never answers cannot hold the call.
      const left = Math.max(1, totalTimeoutMs - (Date.now() - started));
      const timeout = cutOff ? AbortSignal.timeout(left) : null;
      const signal = first.signal && timeout ? AbortSignal.any([first.signal, timeout]) : first.signal ?? timeout;
      const request = new Request(first.url, { method: first.method, headers, body, signal });
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await base(request);
        if (!(await retryable(response))) return response;
      } catch (error) {
        if (first.signal?.aborted) throw error;
        failure = error;
      }
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)) * Math.random();
      const asked = retryAfterMs(response?.headers.get('retry-after') ?? null);
      // Never sooner than the server asked: when it asks for longer than one wait may be, or than
      // the time left, the answer goes back to the caller instead.
      const wait = Math.max(backoff, asked ?? 0);
      if (attempt >= maxAttempts || (asked !== null && asked > maxDelayMs) || Date.now() - started + wait > totalTimeoutMs) {
        if (response) return response;
        throw failure;
      }
      await response?.body?.cancel().catch(() => undefined);
      await sleep(wait, first.signal);
    }
  };
}
