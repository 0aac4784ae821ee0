import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

export type IdPrefix =
  | 'bus'
  | 'sim'
  | 'key'
  | 'itm'
  | 'var'
  | 'list'
  | 'ile'
  | 'prt'
  | 'phm'
  | 'eml'
  | 'phn'
  | 'loc'
  | 'ord'
  | 'oi'
  | 'inv'
  | 'ili'
  | 'req'
  | 'evt'
  | 'we'
  | 'whd'
  | 'whr'
  | 'usr'
  | 'ins'
  | 'aud'
  | 'imp'
  | 'ack'
  | 'shp';

/** A ULID-shaped id (48 bits of ms, 80 random, base32): text order is creation order, keeping btree inserts local. */
let lastTime = -1;
const lastRandom = new Uint8Array(16);
/** Random bytes drawn in blocks: a CSPRNG call per id costs CPU (docs/performance.md). */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

export function newId(prefix: IdPrefix, now = Date.now()): string {
  if (now > lastTime) {
    lastTime = now;
    if (poolAt === pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    for (let i = 0; i < 16; i++) lastRandom[i] = pool[poolAt + i] & 31;
    poolAt += 16;
  } else {
    // Same millisecond (or the clock stepped back): increment, so a process's ids stay ordered.
    for (let i = 15; i >= 0 && ++lastRandom[i] === 32; i--) lastRandom[i] = 0;
  }
  let time = '';
  let t = lastTime;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rand = '';
  for (let i = 0; i < 16; i++) rand += ALPHABET[lastRandom[i]];
  return `${prefix}_${time}${rand}`;
}

/** Client ids are bounded and plain, so they never surprise a query or a log line. */
export const ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';
