import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret: `whsec_` and base64 of 32 random bytes, as the Standard Webhooks specification has them. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the secret's bytes (the base64
 * after `whsec_`): the Standard Webhooks signature. Several secrets (during a rotation) give
 * several signatures, space-separated, and a receiver accepts the message if any one matches.
 */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}
