import { Worker } from 'node:worker_threads';
import { DATA_DEFLATE_OPTIONS, reusableDeflateRaw } from '../log/codec.ts';

/**
 * Deflates events' data (src/log/codec.ts) on its own thread, overlapping the inserts. Texts go
 * over end to end in one transferred buffer (TextRun) and come back so: one copy each way. Plain
 * script text, so it runs the same from the bundle and sources.
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
 * JSON texts written as UTF-8 end to end into one buffer as they are made, with their ends: a text
 * written at once dies young, instead of being promoted and flattened again (docs/performance.md).
 */
export class TextRun {
  #bytes = Buffer.allocUnsafeSlow(1 << 20);
  #ends: number[] = [];
  #length = 0;

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

  /** The bytes and ends to transfer; the run is done with after. */
  take(): { bytes: Buffer; ends: Uint32Array } {
    return { bytes: this.#bytes.subarray(0, this.#length), ends: Uint32Array.from(this.#ends) };
  }
}

export interface Deflater {
  deflate(texts: TextRun): Promise<Buffer[]>;
  close(): Promise<void>;
}

export function createDeflater(): Deflater {
  // A small heap: one batch's texts at a time, and its garbage counts toward the load's memory.
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
