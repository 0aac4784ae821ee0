import type { Db } from '../db/types.ts';

/** Writes what the items of one or more writes of a business ask for, in one go. */
export type Flush<T> = (trx: Db, businessId: string, items: T[]) => Promise<void>;

/** What one write asked a flush for. */
export interface Collected {
  flush: Flush<never>;
  items: unknown[];
}

/** Per transaction a group runs: the list of the write it is running now (`collectFor`). */
const collecting = new WeakMap<object, Collected[]>();

/**
 * Derived rows a write's statements would write again and again in a group of one business's
 * writes (PostgreSQL, src/write/groups.ts), such as the read model's counts: while the group runs
 * a write, the items are kept with that write, and the group flushes those of the writes it keeps
 * once, before its COMMIT, each flush given all their items in order (decision 0070). Anywhere else
 * (a write alone, SQLite, a transaction the runner does not group) `flush` runs at once.
 */
export async function atCommit<T>(trx: Db, businessId: string, flush: Flush<T>, items: T[]): Promise<void> {
  const into = collecting.get(trx);
  if (!into) return flush(trx, businessId, items);
  into.push({ flush: flush as Flush<never>, items });
}

/** The runner: what `atCommit` collects on `trx` goes to `into`, the running write's; undefined stops. */
export function collectFor(trx: Db, into: Collected[] | undefined): void {
  if (into) collecting.set(trx, into);
  else collecting.delete(trx);
}

/** What the running write has collected so far: a part of it that is undone drops its own (src/write/part.ts). */
export const collectedSoFar = (trx: Db): Collected[] | undefined => collecting.get(trx);

/** The group, before its COMMIT: each flush once, with the items of the writes it keeps, in order. */
export async function flushCollected(trx: Db, businessId: string, writes: Collected[][]): Promise<void> {
  collecting.delete(trx);
  const byFlush = new Map<Flush<never>, unknown[]>();
  for (const { flush, items } of writes.flat()) {
    const all = byFlush.get(flush) ?? [];
    byFlush.set(flush, all);
    all.push(...items);
  }
  for (const [flush, items] of byFlush) await (flush as Flush<unknown>)(trx, businessId, items);
}
