import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API keys as people and secret scanners recognise them, after GitHub's token format: `sl_live_`,
 * 30 random base62 characters (178 bits), and a 6-character base62 CRC32 of them. The checksum lets
 * a typo be refused as malformed before any database lookup, and `supplyline key check` verify a
 * key offline. Keys made before this format (32 hex characters) keep working.
 */
export const KEY_PREFIX = 'sl_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const CURRENT = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);
const LEGACY = /^[0-9a-f]{32}$/;

function base62(value: number, length: number): string {
  let out = '';
  for (let n = value; out.length < length; n = Math.floor(n / 62)) out = BASE62[n % 62] + out;
  return out;
}

const checksumOf = (random: string) => base62(crc32(random), CHECKSUM_LENGTH);

/** A new key: the prefix, the random part drawn without bias, and its checksum. */
export function newApiKey(): string {
  let random = '';
  while (random.length < RANDOM_LENGTH) {
    // 248 = 4 × 62: bytes at or above it are dropped, so that every character is equally likely.
    for (const byte of randomBytes(RANDOM_LENGTH))
      if (byte < 248 && random.length < RANDOM_LENGTH) random += BASE62[byte % 62];
  }
  return `${KEY_PREFIX}${random}${checksumOf(random)}`;
}

/** Whether a presented key can be one: `current` (checksum right), `legacy` (32 hex), else `malformed`. */
export function keyFormat(key: string): 'current' | 'legacy' | 'malformed' {
  if (LEGACY.test(key)) return 'legacy';
  if (!CURRENT.test(key)) return 'malformed';
  const body = key.slice(KEY_PREFIX.length);
  return checksumOf(body.slice(0, RANDOM_LENGTH)) === body.slice(RANDOM_LENGTH) ? 'current' : 'malformed';
}

/** What a key list shows of a key: enough to tell keys apart, never enough to use one. */
export const displayPrefix = (key: string) =>
  key.startsWith(KEY_PREFIX) ? key.slice(0, KEY_PREFIX.length + 4) : key.slice(0, 8);
