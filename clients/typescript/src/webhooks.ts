/**
 * Standard Webhooks signature check with WebCrypto (works in Node 20+ and browsers).
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`;
 * secrets are `whsec_<base64>`; pass two while rotating.
 */
export class WebhookVerificationError extends Error {
  constructor(message: string) { super(message); this.name = 'WebhookVerificationError'; }
}

export interface VerifyOptions {
  /** Largest distance between the timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in seconds since the epoch (for tests). */
  nowSeconds?: number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string {
  const value = headers instanceof Headers ? headers.get(name) : headers[name] ?? headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) throw new WebhookVerificationError(`Missing ${name} header`);
  return text;
}

const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

function equal(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** Returns the parsed JSON body when a signature matches one of the secrets; throws WebhookVerificationError otherwise. */
export async function verifyWebhook(body: string | Uint8Array, headers: HeaderSource, secrets: string | string[], options: VerifyOptions = {}): Promise<unknown> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (seconds < now - tolerance) throw new WebhookVerificationError('Message timestamp too old');
  if (seconds > now + tolerance) throw new WebhookVerificationError('Message timestamp too new');
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const payload = new TextEncoder().encode(`${id}.${timestamp}.${text}`);
  const offered = signatures.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3));
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const raw = fromBase64(secret.startsWith('whsec_') ? secret.slice(6) : secret);
    const key = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const expected = toBase64(new Uint8Array(await crypto.subtle.sign('HMAC', key, payload)));
    if (offered.some((s) => equal(s, expected))) return JSON.parse(text);
  }
  throw new WebhookVerificationError('No matching signature found');
}
