import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * scrypt with N=2^17, r=8, p=1 (128 MiB per hash, slow by design). PASSWORD_HASH_COST (log2 N,
 * 14 to 20) sets N for new hashes (test scripts lower it); a stored hash names its own N.
 */
// A bad value is reported by loadConfig (src/config.ts), which every process runs before it hashes.
const N_LOG2 = validCost(process.env.PASSWORD_HASH_COST) ?? 17;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const MAXMEM = 256 * 1024 * 1024;

/** log2 N: 17 when unset; throws naming the range otherwise. */
export function costOf(raw: string | undefined): number {
  const cost = validCost(raw);
  if (cost === null) throw new Error(`PASSWORD_HASH_COST must be a whole number from 14 to 20, got '${raw}'`);
  return cost;
}

function validCost(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return 17;
  const cost = Number(raw);
  return Number.isInteger(cost) && cost >= 14 && cost <= 20 ? cost : null;
}

function derive(password: string, salt: Buffer, nLog2: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { N: 2 ** nLog2, r, p, maxmem: MAXMEM }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/** `scrypt$17$8$1$<salt base64>$<hash base64>`, with a salt of its own. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, N_LOG2, R, P);
  return ['scrypt', N_LOG2, R, P, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** Compares in constant time; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A missing user's sign-in is checked against this: the same work, never a match. */
export const DUMMY_HASH = `scrypt$${N_LOG2}$${R}$${P}$c3VwcGx5bGluZS1kdW1teQ==$3Sk5lh4o5l0wF5mMZk5jD9m8Qd7a0cYh0r3xg8uQm1Q=`;

/** For a new user made by the CLI: 20 characters from 120 random bits. */
export const generatePassword = (): string => randomBytes(15).toString('base64url');
