import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { cookieValue } from './session.ts';

export const FLASH_COOKIE = 'sl_flash';
/** A flash not shown within this long is dropped (redirects are followed at once). */
export const FLASH_SECONDS = 300;

/** What an action says once, on the page it redirects to; `secret` is shown once. */
export interface Flash {
  /** Other pages (another tab, htmx polling) leave it. */
  at: string;
  notice?: string;
  error?: string;
  secret?: { id: string; title: string; value: string; note?: string };
}

/** Derived from the session's secret, which the server never stores: only that browser's cookie opens it. */
const keyOf = (token: string) => createHmac('sha256', token).update('supplyline-console-flash').digest();

/** AES-256-GCM under the session's key, bound to the session and the cookie's name. */
export function sealFlash(token: string, flash: Flash): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(token), iv).setAAD(Buffer.from(FLASH_COOKIE));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/** Anything that does not open (tampered, another session's) is none. */
export function openFlash(token: string, cookieHeader: string | undefined): Flash | null {
  const raw = cookieValue(cookieHeader, FLASH_COOKIE);
  if (!raw || raw.length > 6000) return null;
  try {
    const bytes = Buffer.from(raw, 'base64url');
    if (bytes.length < 29) return null;
    const decipher = createDecipheriv('aes-256-gcm', keyOf(token), bytes.subarray(0, 12)).setAAD(
      Buffer.from(FLASH_COOKIE),
    );
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    const text = Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString(
      'utf8',
    );
    const flash = JSON.parse(text) as Flash;
    return typeof flash?.at === 'string' ? flash : null;
  } catch {
    return null;
  }
}

export const flashCookie = (value: string, maxAgeSeconds: number, secure: boolean) =>
  `${FLASH_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
