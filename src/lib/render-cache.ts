/**
 * Rendered JSON by key, each entry valid for exactly one stamp: the versions of everything it was
 * rendered from. Callers read the current stamp from the database on every request and get an
 * entry only when its stamp is the same, so a stale entry is never served, whichever instance
 * made the change. Entries are UTF-8 bytes, written to the socket as they are; the total is
 * bounded, and the least recently used entries go first.
 */
export class RenderCache {
  readonly #entries = new Map<string, { stamp: string; json: Buffer }>();
  #size = 0;

  readonly maxSize: number;

  constructor(maxSize: number) {
    this.maxSize = maxSize;
  }

  /** False when configured with no memory: callers then skip reading stamps. */
  get enabled(): boolean {
    return this.maxSize > 0;
  }

  /** The entries' bytes (the JSON held; keys and stamps add a little per entry). */
  get size(): number {
    return this.#size;
  }

  get entries(): number {
    return this.#entries.size;
  }

  get(key: string, stamp: string): Buffer | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.stamp !== stamp) return undefined;
    // Most recently used last, so the first key is the one to evict.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.json;
  }

  set(key: string, stamp: string, json: Buffer): void {
    this.delete(key);
    // One huge entry must not flush everything else.
    if (json.length > this.maxSize / 8) return;
    this.#entries.set(key, { stamp, json });
    this.#size += json.length;
    for (const [oldest, entry] of this.#entries) {
      if (this.#size <= this.maxSize) break;
      this.#entries.delete(oldest);
      this.#size -= entry.json.length;
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#size -= entry.json.length;
  }
}
