import { readCommitPayload, type EventHead } from '../log/filter.ts';

interface Waiter {
  wake: () => void;
  /** Whether an event answers a filtered long poll; absent: any commit does. */
  takes?: (event: EventHead) => boolean;
}

/**
 * Wakes the feed's long polls when a business's events commit: the write runner notifies its
 * instance, and on PostgreSQL every instance hears every commit (src/db/listen.ts). A waiter holds
 * no database connection.
 */
export class EventBus {
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** The business of the last detailed notification: the bare one that follows is its twin. */
  #heard: string | null = null;
  #count = 0;
  #closed = false;
  readonly #listeners = new Set<(businessId: string | null) => void>();

  readonly maxWaiters: number;
  /**
   * One business's share of them: each sandbox is a business of its own, so a live business and
   * its sandboxes (SANDBOXES_PER_BUSINESS, 10) hold at most 5,500 of the 10,000, and the others'
   * long polls still wait.
   */
  readonly maxPerBusiness: number;

  constructor(maxWaiters = 10_000, maxPerBusiness = 500) {
    this.maxWaiters = maxWaiters;
    this.maxPerBusiness = maxPerBusiness;
  }

  get waiting(): number {
    return this.#count;
  }

  /** Hears every notification (the webhook worker); returns the unsubscribe. */
  onNotify(listener: (businessId: string | null) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Wakes the business's waiters whose filters take one of `heads`, or all when heads are null. */
  notify(businessId: string, heads: EventHead[] | null = null): void {
    for (const listener of this.#listeners) listener(businessId);
    const waiters = this.#waiters.get(businessId);
    if (!waiters) return;
    for (const waiter of [...waiters]) {
      if (heads === null || !waiter.takes || heads.some(waiter.takes)) waiter.wake();
    }
  }

  /**
   * A PostgreSQL notification (see commitPayload). Writers send a detailed one, then the bare id
   * for earlier releases, skipped here; a bare one alone wakes every waiter of the business.
   */
  hear(payload: string): void {
    const message = readCommitPayload(payload);
    if (!message) return;
    const twin = message.heads === null && this.#heard === message.businessId;
    this.#heard = message.heads === null ? null : message.businessId;
    if (!twin) this.notify(message.businessId, message.heads);
  }

  /**
   * Subscribe before reading, so a commit in between still wakes the caller. Resolves on the next
   * matching notification, after `ms`, on abort, `cancel()` or close; `ready` is false when
   * waiting is not possible (closed, or too many waiters, in all or of the business).
   */
  subscribe(
    businessId: string,
    ms: number,
    signal?: AbortSignal,
    takes?: (event: EventHead) => boolean,
  ): { ready: boolean; woken: Promise<void>; cancel: () => void } {
    let waiters = this.#waiters.get(businessId);
    if (
      this.#closed ||
      this.#count >= this.maxWaiters ||
      (waiters?.size ?? 0) >= this.maxPerBusiness ||
      signal?.aborted
    )
      return { ready: false, woken: Promise.resolve(), cancel: () => {} };
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

  /** Wakes every waiter to read again: notifications may have been lost (a listener reconnected). */
  wakeAll(): void {
    for (const listener of this.#listeners) listener(null);
    for (const businessId of [...this.#waiters.keys()]) this.notify(businessId);
  }

  /** Wakes every waiter and takes no more: shutdown answers long polls now. */
  close(): void {
    this.#closed = true;
    this.wakeAll();
  }
}
