import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API keys after GitHub's token format: `sl_live_` (a live business) or `sl_test_` (a sandbox,
 * src/sandbox), 30 random base62 characters and a base62 CRC32, so a typo is refused before any
 * lookup and `supplyline key check` works offline. Legacy 32-hex keys keep working, on live businesses.
 */
export const KEY_PREFIX = 'sl_live_';
export const TEST_KEY_PREFIX = 'sl_test_';
export type KeyMode = 'live' | 'test';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const CURRENT = new RegExp(`^sl_(live|test)_[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);
const LEGACY = /^[0-9a-f]{32}$/;

function base62(value: number, length: number): string {
  let out = '';
  for (let n = value; out.length < length; n = Math.floor(n / 62)) out = BASE62[n % 62] + out;
  return out;
}

const checksumOf = (random: string) => base62(crc32(random), CHECKSUM_LENGTH);

export function newApiKey(mode: KeyMode = 'live'): string {
  let random = '';
  while (random.length < RANDOM_LENGTH) {
    // 248 = 4 × 62: bytes above are dropped so every character is equally likely.
    for (const byte of randomBytes(RANDOM_LENGTH))
      if (byte < 248 && random.length < RANDOM_LENGTH) random += BASE62[byte % 62];
  }
  return `${mode === 'test' ? TEST_KEY_PREFIX : KEY_PREFIX}${random}${checksumOf(random)}`;
}

/** `current` (checksum right), `legacy` (32 hex), else `malformed`. */
export function keyFormat(key: string): 'current' | 'legacy' | 'malformed' {
  if (LEGACY.test(key)) return 'legacy';
  if (!CURRENT.test(key)) return 'malformed';
  const body = key.slice(KEY_PREFIX.length);
  return checksumOf(body.slice(0, RANDOM_LENGTH)) === body.slice(RANDOM_LENGTH) ? 'current' : 'malformed';
}

/** `test` for an `sl_test_` key (a sandbox's), else `live` (legacy keys included), whatever its checksum. */
export const keyMode = (key: string): KeyMode => (key.startsWith(TEST_KEY_PREFIX) ? 'test' : 'live');

/** Enough to tell keys apart, never to use one. */
export const displayPrefix = (key: string) =>
  key.startsWith(KEY_PREFIX) || key.startsWith(TEST_KEY_PREFIX) ? key.slice(0, KEY_PREFIX.length + 4) : key.slice(0, 8);
