import { randomBytes } from 'node:crypto';

/** mulberry32: a small seeded generator, so a demo's shape (not its ids) can be repeated. */
export function createRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  const weighted = <T>(pairs: ReadonlyArray<readonly [T, number]>): T => {
    const total = pairs.reduce((s, [, w]) => s + w, 0);
    let r = next() * total;
    for (const [value, w] of pairs) if ((r -= w) < 0) return value;
    return pairs[pairs.length - 1][0];
  };
  return { next, int, pick, weighted, chance: (p: number) => next() < p };
}
export type Random = ReturnType<typeof createRandom>;

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
let pool = randomBytes(0);
let at = 0;

/** An id shaped as src/lib/ids.ts makes for a given time, so historic ids sort with createdAt; random part from the crypto pool. */
export function idAt(prefix: string, ms: number): string {
  if (at + 16 > pool.length) {
    pool = randomBytes(64 * 1024);
    at = 0;
  }
  let time = '';
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  let rand = '';
  for (let i = 0; i < 16; i++) rand += ALPHABET[pool[at++] & 31];
  return `${prefix}_${time}${rand}`;
}

/** Integers of 1/10,000, so prices times factors stay exact. */
export const UNIT = 10_000;

/** Canonical decimal text: 125000 -> "12.5". */
export function unitsToDecimal(units: number): string {
  const whole = Math.trunc(units / UNIT);
  const frac = Math.abs(units % UNIT);
  if (frac === 0) return String(whole);
  return `${whole}.${String(frac).padStart(4, '0').replace(/0+$/, '')}`;
}
