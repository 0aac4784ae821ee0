/**
 * Rendered JSON by key, each entry valid for exactly one stamp: the versions of everything it was
 * rendered from. Callers read the current stamp from the database on every request and get an
 * entry only when its stamp is the same, so a stale entry is never served, whichever instance
 * made the change. Entries are UTF-8 bytes, written to the socket as they are; the total is
 * bounded, and the least recently used entries go first.
 *
 * The bound counts what an entry keeps alive: a Buffer that is a slice of a larger allocation
 * (`Buffer.from` of a short text takes a slice of a shared 8 kB slab) would keep all of it, so such
 * an entry is copied into an allocation of its own first, and each entry is charged its key and
 * a fixed overhead besides its bytes.
 */
/** The Map entry, the Buffer and its ArrayBuffer, the record and the stamp, roughly, in bytes. */
export const ENTRY_OVERHEAD = 256;

const chargeOf = (key: string, json: Buffer) => json.length + key.length + ENTRY_OVERHEAD;

/** The bytes in an allocation of their own, unless they are one already. */
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

  /** What the entries keep alive, in bytes: their JSON, keys and an estimate of each entry's overhead. */
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
