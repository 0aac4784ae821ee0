/**
 * Rendered JSON by key, each entry valid for exactly one stamp (the versions it was rendered from),
 * read on every request, so a stale entry is never served whichever instance changed it. Bounded by
 * what entries keep alive (slices of shared slabs are copied out), least recently used out first.
 */
/** Per-entry overhead in bytes, roughly: Map entry, Buffer, record and stamp. */
export const ENTRY_OVERHEAD = 256;

const chargeOf = (key: string, json: Buffer) => json.length + key.length + ENTRY_OVERHEAD;

function own(json: Buffer): Buffer {
  if (json.byteOffset === 0 && json.buffer.byteLength === json.length) return json;
  const copy = Buffer.allocUnsafeSlow(json.length);
  json.copy(copy);
  return copy;
}

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

  /** Bytes kept alive: JSON, keys and each entry's overhead. */
  get size(): number {
    return this.#size;
  }

  get entries(): number {
    return this.#entries.size;
  }

  get(key: string, stamp: string): Buffer | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.stamp !== stamp) return undefined;
    // Most recently used last, so the first key is evicted.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.json;
  }

  set(key: string, stamp: string, json: Buffer): void {
    this.delete(key);
    // One huge entry must not flush everything else.
    if (chargeOf(key, json) > this.maxSize / 8) return;
    this.#entries.set(key, { stamp, json: own(json) });
    this.#size += chargeOf(key, json);
    for (const [oldest, entry] of this.#entries) {
      if (this.#size <= this.maxSize) break;
      this.#entries.delete(oldest);
      this.#size -= chargeOf(oldest, entry.json);
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#size -= chargeOf(key, entry.json);
  }
}
