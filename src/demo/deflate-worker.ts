import { Worker } from 'node:worker_threads';
import { DATA_DEFLATE_OPTIONS, reusableDeflateRaw } from '../log/codec.ts';

/**
 * Deflates events' data (src/log/codec.ts) on a thread of its own, so that it overlaps the
 * inserts: deflating the demo's events took as long as all of its SQL. The texts go over written
 * end to end into one transferred buffer (TextRun), and come back so: one copy each way, not one
 * message per event (joining them into one string first cost as much as the JSON.stringify, to
 * flatten it). The worker is plain script text, so it runs the same from the bundle and sources.
 */
const SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
const deflateRaw = (${reusableDeflateRaw.toString()})(require('node:zlib'), workerData);
const split = (bytes, ends) => Array.from(ends, (end, i) => bytes.subarray(i === 0 ? 0 : ends[i - 1], end));
const join = (parts) => {
  const ends = new Uint32Array(parts.length);
  let total = 0;
  parts.forEach((part, i) => { total += part.length; ends[i] = total; });
  const bytes = new Uint8Array(total);
  parts.forEach((part, i) => bytes.set(part, i === 0 ? 0 : ends[i - 1]));
  return { bytes, ends };
};
parentPort.on('message', ({ id, bytes, ends }) => {
  const out = join(split(bytes, ends).map((json) => deflateRaw(json)));
  parentPort.postMessage({ id, ...out }, [out.bytes.buffer, out.ends.buffer]);
});`;

/**
 * JSON texts written end to end as UTF-8 into one buffer as they are made, with where each ends:
 * what the worker is sent. Written at once, a text dies young. Kept as strings until the batch was
 * sent, they outlived two scavenges, were promoted, and were flattened again in the old generation
 * to be measured: the largest item of a PostgreSQL load's old-generation garbage (docs/performance.md).
 */
export class TextRun {
  #bytes = Buffer.allocUnsafeSlow(1 << 20);
  #ends: number[] = [];
  #length = 0;

  /** How many texts the run holds. */
  get count(): number {
    return this.#ends.length;
  }

  push(text: string): void {
    const most = this.#length + text.length * 3;
    if (most > this.#bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(most, this.#bytes.length * 2));
      this.#bytes.copy(grown, 0, 0, this.#length);
      this.#bytes = grown;
    }
    this.#length += this.#bytes.write(text, this.#length);
    this.#ends.push(this.#length);
  }

  /** The bytes and the ends, to hand over (transfer): the run is done with after it. */
  take(): { bytes: Buffer; ends: Uint32Array } {
    return { bytes: this.#bytes.subarray(0, this.#length), ends: Uint32Array.from(this.#ends) };
  }
}

export interface Deflater {
  /** Each text of the run as stored data, in order. */
  deflate(texts: TextRun): Promise<Buffer[]>;
  close(): Promise<void>;
}

export function createDeflater(): Deflater {
  // A small heap: the worker holds one batch's texts at a time, and its garbage counts towards the load's memory.
  const worker = new Worker(SCRIPT, {
    eval: true,
    workerData: DATA_DEFLATE_OPTIONS,
    resourceLimits: { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 },
  });
  worker.unref();
  const waiting = new Map<number, { resolve: (parts: Buffer[]) => void; reject: (error: Error) => void }>();
  let next = 0;
  const failAll = (error: Error) => {
    for (const { reject } of waiting.values()) reject(error);
    waiting.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`the deflate worker exited (${code})`)));
  worker.on('message', ({ id, bytes, ends }: { id: number; bytes: Uint8Array; ends: Uint32Array }) => {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const parts = Array.from(ends, (end, i) => buffer.subarray(i === 0 ? 0 : ends[i - 1], end));
    waiting.get(id)?.resolve(parts);
    waiting.delete(id);
  });
  return {
    deflate(texts) {
      if (texts.count === 0) return Promise.resolve([]);
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        const { bytes, ends } = texts.take();
        worker.postMessage({ id, bytes, ends }, [bytes.buffer as ArrayBuffer, ends.buffer as ArrayBuffer]);
      });
    },
    async close() {
      await worker.terminate();
    },
  };
}
