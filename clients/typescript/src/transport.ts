import {
  SupplylineApiError,
  SupplylineConnectionError,
  type SupplylineError,
  SupplylineTimeoutError,
  type ErrorBody,
} from './errors.ts';
import { VERSION } from './version.ts';

export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** First backoff in ms, doubled per attempt, with full jitter (default 200). */
  baseDelayMs?: number;
  /** Longest single wait in ms (default 10 000); a Retry-After asking for longer is not retried but thrown. */
  maxDelayMs?: number;
}

/**
 * `after-my-writes`: every read sends `Consistent-After` with the latest `Supplyline-Position` this
 * client has seen, so a server reading from replicas answers no older than that point. (Such a server
 * already waits for every write committed before a read began; this names the point explicitly.)
 * `any` (the default): no header.
 */
export type Consistency = 'after-my-writes' | 'any';

/** What every method takes as its last argument. */
export interface RequestOptions {
  /** This call's consistency, instead of the client's. */
  consistency?: Consistency;
  /**
   * The Idempotency-Key of a POST or PATCH. By default each call makes one and its retries reuse it;
   * pass your own (stored with the work) so that a retry after a restart cannot create a duplicate.
   */
  idempotencyKey?: string;
  /** Milliseconds the call may take, attempts and waits included (default the client's `timeout`). */
  timeout?: number;
  /** Aborts the call; it then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

export interface Hooks {
  /** Called before each attempt; may return a Request to send instead. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that returns nothing is the common case
  onRequest?: (request: Request) => void | Request | Promise<void | Request>;
  /** Called with each attempt's response (do not read its body: the client does). */
  onResponse?: (response: Response, request: Request) => void | Promise<void>;
}

export interface TransportOptions {
  baseUrl: string;
  headers: Record<string, string>;
  fetch?: (request: Request, init?: RequestInit) => Promise<Response>;
  retry?: RetryOptions;
  /** Default `timeout` of a call in ms (30 000). */
  timeout?: number;
  hooks?: Hooks;
  /** Default consistency of reads (`any`). */
  consistency?: Consistency;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface Call {
  method: string;
  path: string;
  query?: object;
  body?: unknown;
  /** A body sent as it is (the raw client's), instead of `body` as JSON. */
  payload?: string;
  headers?: Record<string, string>;
  options?: RequestOptions;
}

/** Statuses worth another attempt with the same Idempotency-Key: the write either did not happen or will replay. */
const RETRYABLE = new Set([429, 500, 502, 503, 504]);
const WRITES = new Set(['POST', 'PATCH']);

export const isRetryableStatus = (status: number) => RETRYABLE.has(status);

/** Seconds or an HTTP date, as milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

const POSITION = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

/** A `Supplyline-Position` (`16/B374D848`) as a number to compare; null when it is not one. */
export function positionValue(text: string | null): bigint | null {
  const match = text ? POSITION.exec(text) : null;
  return match ? (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`) : null;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

async function retryable(response: Response): Promise<boolean> {
  if (RETRYABLE.has(response.status)) return true;
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as ErrorBody | null;
  return body?.errorCode === 'IDEMPOTENCY_KEY_IN_USE';
}

async function apiError(response: Response): Promise<SupplylineApiError> {
  const body = (await response.json().catch(() => undefined)) as ErrorBody | undefined;
  return new SupplylineApiError(response.status, body, response.headers.get('x-request-id'), response);
}

export type Transport = ReturnType<typeof createTransport>;

/**
 * Sends calls with retries: network errors, cut bodies, 429, 500, 502, 503, 504 and 409
 * IDEMPOTENCY_KEY_IN_USE are tried again with the same Idempotency-Key, after exponential backoff
 * with full jitter and never sooner than Retry-After, until `maxAttempts` or the call's timeout.
 */
export function createTransport(options: TransportOptions) {
  const base = options.fetch ?? ((input: Request) => globalThis.fetch(input));
  const { maxAttempts = 5, baseDelayMs = 200, maxDelayMs = 10_000 } = options.retry ?? {};
  const defaultTimeout = options.timeout ?? 30_000;
  /** The latest Supplyline-Position seen, and its value. */
  let position: { text: string; value: bigint } | null = null;
  const remember = (response: Response) => {
    const text = response.headers.get('supplyline-position');
    const value = positionValue(text);
    if (value !== null && (position === null || value > position.value)) position = { text: text!, value };
  };

  const url = (path: string, query: object = {}) => {
    const u = new URL(path, options.baseUrl);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  };

  function headersOf(call: Call): Headers {
    // Set one source after another: header names differ in case between them (the raw client's
    // Request lower-cases its own), and each name must be sent once, the last source's value.
    const headers = new Headers({ 'User-Agent': `supplyline-node/${VERSION}` });
    for (const source of [options.headers, call.headers, call.options?.headers])
      for (const [name, value] of Object.entries(source ?? {})) headers.set(name, value);
    if (call.body !== undefined) headers.set('Content-Type', 'application/json');
    const consistency = call.options?.consistency ?? options.consistency ?? 'any';
    const reads = call.method === 'GET' || call.method === 'HEAD';
    if (consistency === 'after-my-writes' && reads && position && !headers.has('Consistent-After'))
      headers.set('Consistent-After', position.text);
    if (call.options?.idempotencyKey) headers.set('Idempotency-Key', call.options.idempotencyKey);
    else if (WRITES.has(call.method) && !headers.has('Idempotency-Key'))
      headers.set('Idempotency-Key', crypto.randomUUID());
    return headers;
  }

  /**
   * One call: `read` turns an ok response into the result inside the attempt, so a body cut mid-way
   * is retried like a dropped connection. With `stream`, the timeout stops once the headers are in;
   * with `anyStatus`, an answer that is not retried is returned whatever its status (the raw client's way).
   */
  async function execute<T>(
    call: Call,
    read: (response: Response) => Promise<T>,
    mode: { stream?: boolean; anyStatus?: boolean } = {},
  ): Promise<T | Response> {
    const timeout = call.options?.timeout ?? defaultTimeout;
    const deadline = Date.now() + timeout;
    const userSignal = call.options?.signal;
    const headers = headersOf(call);
    const key = headers.get('Idempotency-Key') ?? undefined;
    /** The error with the call's key, for a caller who sends the call again. */
    const keyed = <E extends SupplylineError>(error: E): E => {
      error.idempotencyKey = key;
      return error;
    };
    const body = call.body === undefined ? call.payload : JSON.stringify(call.body);
    const target = url(call.path, call.query);
    for (let attempt = 1; ; attempt++) {
      const clock = new AbortController();
      const timer = setTimeout(() => clock.abort(), Math.max(1, deadline - Date.now()));
      const signal = userSignal ? AbortSignal.any([userSignal, clock.signal]) : clock.signal;
      let request = new Request(target, { method: call.method, headers, body, signal });
      request = (await options.hooks?.onRequest?.(request)) ?? request;
      let response: Response | undefined;
      let failure: unknown;
      try {
        response = await base(request);
      } catch (error) {
        failure = error;
      }
      if (response) remember(response);
      if (response)
        await Promise.resolve(options.hooks?.onResponse?.(response, request)).catch((error) => {
          clearTimeout(timer);
          throw error;
        });
      try {
        if (response?.ok) {
          if (mode.stream) clearTimeout(timer);
          return await read(response);
        }
        // A DELETE takes no Idempotency-Key, so its repeat answers 404 once the attempt before deleted.
        if (response?.status === 404 && call.method === 'DELETE' && attempt > 1 && !mode.anyStatus)
          return await read(new Response(null, { status: 204 }));
        if (response && !(await retryable(response))) {
          if (mode.anyStatus) return response;
          throw keyed(await apiError(response));
        }
      } catch (error) {
        if (error instanceof SupplylineApiError || !response?.ok) throw error;
        failure = error;
        response = undefined;
      } finally {
        clearTimeout(timer);
      }
      if (userSignal?.aborted) throw userSignal.reason;
      if (clock.signal.aborted) throw keyed(new SupplylineTimeoutError(timeout, failure));
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)) * Math.random();
      const asked = retryAfterMs(response?.headers.get('retry-after') ?? null);
      // Never sooner than the server asked; when it asks for longer than one wait may be, or than
      // the time left, the answer goes back to the caller instead.
      const wait = Math.max(backoff, asked ?? 0);
      if (attempt >= maxAttempts || (asked !== null && asked > maxDelayMs) || Date.now() + wait >= deadline) {
        if (response && mode.anyStatus) return response;
        if (response) throw keyed(await apiError(response));
        throw keyed(new SupplylineConnectionError(failure));
      }
      await response?.body?.cancel().catch(() => undefined);
      await sleep(wait, userSignal);
    }
  }

  return {
    url,
    /** The latest Supplyline-Position an answer carried (a server with read replicas sends one), or null. */
    position: () => position?.text ?? null,
    /** Any answer as a Response, its body unread, after the retries (the raw client's fetch). */
    fetch: (call: Call) =>
      execute(call, async (response) => response, { stream: true, anyStatus: true }) as Promise<Response>,
    /** The answer as JSON (undefined for 204), with its ETag. */
    json: <T>(call: Call) =>
      execute(call, async (response) => ({
        data: (response.status === 204 ? undefined : await response.json()) as T,
        etag: response.headers.get('etag') ?? undefined,
        response,
      })) as Promise<{ data: T; etag: string | undefined; response: Response }>,
    /** The response once its headers are in; the body is the caller's to read, not cut off by the timeout. */
    stream: (call: Call) => execute(call, async (response) => response, { stream: true }) as Promise<Response>,
  };
}
