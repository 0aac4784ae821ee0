import http from 'node:http';
import https from 'node:https';
import { BlockedAddressError, checkLiteralHost, guardedLookup } from './address.ts';

/** One attempt's result: status (null when none came), the start of the body, and the error, if any. */
export interface SendResult {
  status: number | null;
  body: string | null;
  latencyMs: number;
  /** Seconds from a 429's or 503's Retry-After. */
  retryAfterSeconds: number | null;
  error: string | null;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
}

const BODY_KEPT = 1024;
/** Read at most this much of a response, so the connection can be kept; beyond, it is closed. */
const BODY_READ = 64 * 1024;

/** Seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined) return null;
  if (/^\s*\d{1,9}\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Posts deliveries: no redirects, one time limit per attempt, and unless private networks are
 * allowed only https to public addresses (literals checked here, names at resolve, address.ts).
 */
export function createSender(options: SenderOptions) {
  const lookup = options.allowPrivateNetworks ? undefined : guardedLookup;
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64, lookup }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64, lookup }),
  };

  function send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const finish = (partial: Partial<SendResult>): SendResult => ({
      status: null,
      body: null,
      retryAfterSeconds: null,
      error: null,
      ...partial,
      latencyMs: Math.round(performance.now() - started),
    });
    let target: URL;
    try {
      target = new URL(url);
      if (target.protocol !== 'https:' && !(options.allowPrivateNetworks && target.protocol === 'http:')) {
        return Promise.resolve(finish({ error: `${target.protocol} URLs are not allowed; use https` }));
      }
      if (!options.allowPrivateNetworks) checkLiteralHost(target.hostname);
    } catch (error) {
      return Promise.resolve(
        finish({ error: error instanceof BlockedAddressError ? error.message : 'The URL is not valid' }),
      );
    }
    const payload = Buffer.from(body);
    return new Promise((resolve) => {
      let settled = false;
      const done = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const client = target.protocol === 'https:' ? https : http;
      const request = client.request(
        target,
        {
          method: 'POST',
          agent: agents[target.protocol as 'http:' | 'https:'],
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': String(payload.length),
            'user-agent': 'Supplyline-Webhooks/1',
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          let read = 0;
          const status = response.statusCode ?? null;
          const complete = () =>
            done(
              finish({
                status,
                body: Buffer.concat(chunks).subarray(0, BODY_KEPT).toString('utf8'),
                retryAfterSeconds:
                  status === 429 || status === 503 ? retryAfterSeconds(response.headers['retry-after']) : null,
              }),
            );
          response.on('data', (chunk: Buffer) => {
            if (read < BODY_KEPT) chunks.push(chunk);
            read += chunk.length;
            if (read > BODY_READ) {
              response.destroy();
              complete();
            }
          });
          response.on('end', complete);
          response.on('error', complete);
        },
      );
      const timer = setTimeout(() => {
        request.destroy();
        done(finish({ error: `No response within ${options.timeoutMs} ms` }));
      }, options.timeoutMs);
      request.on('error', (error: NodeJS.ErrnoException) => {
        const reason =
          error instanceof BlockedAddressError || error.code === 'EBLOCKEDADDRESS'
            ? error.message
            : `Could not deliver: ${error.code ?? 'connection failed'}`;
        done(finish({ error: reason }));
      });
      request.end(payload);
    });
  }

  return {
    send,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

export type Sender = ReturnType<typeof createSender>;
