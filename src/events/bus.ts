import { readCommitPayload, type EventHead } from '../log/filter.ts';

interface Waiter {
  wake: () => void;
  /** Whether a commit with this event answers the waiter (a filtered long poll); absent: any commit does. */
  takes?: (event: EventHead) => boolean;
}

/**
 * Wakes long polls of the feed when a business's events commit. Each instance has one; the write
 * runner notifies it after a commit with events, and on PostgreSQL every instance also hears every
 * other's commits (src/db/listen.ts), so a long poll wakes whichever instance wrote. A waiter holds
 * no database connection: it is a promise until the next notification, its time limit, or close.
 */
export class EventBus {
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** The business of the last detailed notification heard: the bare one that follows it is its twin. */
  #heard: string | null = null;
  #count = 0;
  #closed = false;
  readonly #listeners = new Set<(businessId: string | null) => void>();

  readonly maxWaiters: number;

  constructor(maxWaiters = 10_000) {
    this.maxWaiters = maxWaiters;
  }

  /** Long polls now waiting on this instance. */
  get waiting(): number {
    return this.#count;
  }

  /** Hears every notification (the webhook worker); returns the function that stops it. */
  onNotify(listener: (businessId: string | null) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * A commit of the business's events: wakes its waiters whose filters take one of `heads`, or all
   * of them when the heads are not known (null).
   */
  notify(businessId: string, heads: EventHead[] | null = null): void {
    for (const listener of this.#listeners) listener(businessId);
    const waiters = this.#waiters.get(businessId);
    if (!waiters) return;
    for (const waiter of [...waiters]) {
      if (heads === null || !waiter.takes || heads.some(waiter.takes)) waiter.wake();
    }
  }

  /**
   * A notification from PostgreSQL (src/log/filter.ts commitPayload). A writer of this release
   * sends its detailed one, then the bare business id for earlier releases: that second one is
   * skipped here. A bare one alone comes from an earlier release and wakes every waiter of the business.
   */
  hear(payload: string): void {
    const message = readCommitPayload(payload);
    if (!message) return;
    const twin = message.heads === null && this.#heard === message.businessId;
    this.#heard = message.heads === null ? null : message.businessId;
    if (!twin) this.notify(message.businessId, message.heads);
  }

  /**
   * Subscribes before the caller reads, so that a commit between its read and its wait still
   * wakes it. The promise resolves on the business's next notification (with `takes`, the next one
   * of an event it takes), after `ms`, on `signal`'s
   * abort, `cancel()`, or when the bus closes; `ready` is false when waiting is not possible (closed,
   * or too many waiters).
   */
  subscribe(
    businessId: string,
    ms: number,
    signal?: AbortSignal,
    takes?: (event: EventHead) => boolean,
  ): { ready: boolean; woken: Promise<void>; cancel: () => void } {
    if (this.#closed || this.#count >= this.maxWaiters || signal?.aborted)
      return { ready: false, woken: Promise.resolve(), cancel: () => {} };
    let waiters = this.#waiters.get(businessId);
    if (!waiters) this.#waiters.set(businessId, (waiters = new Set()));
    const set = waiters;
    this.#count++;
    let cancel = () => {};
    const woken = new Promise<void>((resolve) => {
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(waiter);
        if (set.size === 0 && this.#waiters.get(businessId) === set) this.#waiters.delete(businessId);
        this.#count--;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      const waiter: Waiter = { wake: done, takes };
      set.add(waiter);
      cancel = done;
    });
    return { ready: true, woken, cancel };
  }

  /** Wakes every waiter, to read again: notifications may have been lost (a listener reconnected). */
  wakeAll(): void {
    for (const listener of this.#listeners) listener(null);
    for (const businessId of [...this.#waiters.keys()]) this.notify(businessId);
  }

  /** Wakes every waiter and takes no more: the server is shutting down, and long polls answer now. */
  close(): void {
    this.#closed = true;
    this.wakeAll();
  }
}
