/**
 * Standard Webhooks signature check with WebCrypto (works in Node 20+ and browsers), behaving as
 * the reference `standardwebhooks` package does on every edge case (a test holds them together).
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`;
 * secrets are `whsec_<base64>`; pass two while rotating.
 */
import { SupplylineError } from './errors.ts';

export class WebhookVerificationError extends SupplylineError {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** Largest distance between the timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in seconds since the epoch (for tests). */
  nowSeconds?: number;
}

/** Fetch `Headers` (or anything with `get`), Node's `IncomingHttpHeaders`, or a plain object in any case. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

/** The header's value, its name matched in any case (the last such key wins, as in the reference). */
function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  let found: string | string[] | undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) found = value;
  }
  return Array.isArray(found) ? found[0] : found;
}

const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

function equal(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Returns the parsed JSON body (undefined for an empty one) when a signature matches one of the
 * secrets; throws WebhookVerificationError otherwise. Pass the body exactly as received.
 */
export async function verifyWebhook(
  body: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | string[],
  options: VerifyOptions = {},
): Promise<unknown> {
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures) throw new WebhookVerificationError('Missing required headers');
  // parseInt, as the reference reads it: what is signed is the number it finds.
  const timestamp = parseInt(timestampText, 10);
  if (Number.isNaN(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (now - timestamp > tolerance) throw new WebhookVerificationError('Message timestamp too old');
  if (timestamp > now + tolerance) throw new WebhookVerificationError('Message timestamp too new');
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const payload = new TextEncoder().encode(`${id}.${timestamp}.${text}`);
  const offered = signatures
    .split(' ')
    .map((s) => s.split(','))
    .filter(([version]) => version === 'v1')
    .map(([, signature]) => signature ?? '');
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const raw = fromBase64(secret.startsWith('whsec_') ? secret.slice(6) : secret);
    if (raw.length === 0) throw new Error("Secret can't be empty.");
    const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const expected = toBase64(new Uint8Array(await crypto.subtle.sign('HMAC', key, payload)));
    if (offered.some((s) => equal(s, expected))) return text === '' ? undefined : JSON.parse(text);
  }
  throw new WebhookVerificationError('No matching signature found');
}
