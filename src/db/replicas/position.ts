/** A WAL position (PostgreSQL's `pg_lsn`) as a number, and the one query shape every position is read with. */
export type Position = bigint;

const LSN = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i;

/** `16/B374D848` → a number; null when it is not one. */
export function parsePosition(text: string): Position | null {
  const match = LSN.exec(text);
  if (!match) return null;
  return (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`);
}

export function formatPosition(position: Position): string {
  return `${(position >> 32n).toString(16).toUpperCase()}/${(position & 0xffffffffn).toString(16).toUpperCase()}`;
}

/**
 * The primary's position that covers every transaction committed so far: with synchronous commit a
 * transaction is visible only once its commit record is flushed; without it, once it is inserted.
 */
export const PRIMARY_POSITION = `select (case when current_setting('synchronous_commit') = 'off'
  then pg_current_wal_insert_lsn() else pg_current_wal_flush_lsn() end)::text as position`;

/**
 * One query shared by every caller of one turn of the event loop: it is sent on the next turn, so
 * after each of them asked, and its answer is as fresh as a query of their own would be.
 */
export class SharedQuery<T> {
  readonly #run: () => Promise<T>;
  #next: Promise<T> | null = null;
  /** Queries sent, for tests and the benchmark. */
  sent = 0;

  constructor(run: () => Promise<T>) {
    this.#run = run;
  }

  get(): Promise<T> {
    if (this.#next) return this.#next;
    const next = new Promise<T>((resolve, reject) => {
      setImmediate(() => {
        this.#next = null;
        this.sent++;
        this.#run().then(resolve, reject);
      });
    });
    this.#next = next;
    return next;
  }
}

/** The promise's value, or undefined once `ms` have passed without it. */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
