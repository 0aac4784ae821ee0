import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets the service must read again (webhook secrets, replayed answers). Keys
 * from SECRET_KEY (comma-separated: the first encrypts, all decrypt) or a key file made at first
 * start. Stored as `v1.<key index>.<iv>.<tag>.<ciphertext>`, base64url.
 */
export class SecretBox {
  readonly #keys: Buffer[];

  constructor(keys: Buffer[]) {
    if (keys.length === 0 || keys.some((k) => k.length !== 32))
      throw new Error('SecretBox needs one or more 32-byte keys');
    this.#keys = keys;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0], iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      'v1',
      '0',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      data.toString('base64url'),
    ].join('.');
  }

  open(sealed: string): string {
    const [version, , iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || data === undefined) throw new Error('Not a sealed secret');
    // After a rotation the old keys follow the new one.
    for (const key of this.#keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
      } catch {}
    }
    throw new Error('No configured SECRET_KEY opens this secret');
  }
}

export function parseSecretKeys(raw: string): Buffer[] | null {
  const keys = raw.split(',').map((k) => Buffer.from(k.trim(), 'base64'));
  return keys.length > 0 && keys.every((k) => k.length === 32) ? keys : null;
}

export const newSecretKey = (): string => randomBytes(32).toString('base64');
