import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` and base64 of 32 random bytes, per Standard Webhooks. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Standard Webhooks signature `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the
 * bytes after `whsec_`; several secrets give several, space-separated, and any one may match.
 */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}
