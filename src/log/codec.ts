import * as zlib from 'node:zlib';
import { inflateRawSync } from 'node:zlib';

/**
 * An event's `data` as stored: its JSON, deflated at level 1. Events carry the whole resource,
 * and JSON of that shape compresses well (docs/performance.md): the difference between a busy
 * business's year of events fitting comfortably on a disk and not. Level 1 compresses nearly as
 * well as 6 and costs less in every write (the deflate was the largest part of appending an event).
 */
export const DATA_DEFLATE_OPTIONS = { level: 1 } as const;

/**
 * Deflate with one zlib stream, reset after each text: the same bytes as `deflateRawSync`, which
 * sets up and frees a stream per call, most of its cost for texts as short as an event's. Through
 * the stream's handle, as zlib's own sync calls use it; `deflateRawSync` where that is not there or
 * a text does not fit. Self-contained (node:zlib and the options are its arguments), so that the
 * demo's deflate worker, a plain script, runs its source too (src/demo/deflate-worker.ts).
 */
export function reusableDeflateRaw(
  zlib: typeof import('node:zlib'),
  options: import('node:zlib').ZlibOptions,
): (text: Uint8Array, flush?: number) => Buffer {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const stream = new zlib.DeflateRaw(options) as any;
  const handle = stream._handle;
  const state = stream._writeState;
  const { Z_FINISH } = zlib.constants;
  // No named functions inside: esbuild (tsx) would wrap them in a helper the worker does not have.
  const sync = { ...options, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  if (
    typeof handle?.writeSync !== 'function' ||
    typeof handle.reset !== 'function' ||
    !(state instanceof Uint32Array)
  ) {
    return (text, flush = Z_FINISH) => zlib.deflateRawSync(text, flush === Z_FINISH ? options : sync);
  }
  let out = Buffer.allocUnsafe(64 * 1024);
  return (text, flush = Z_FINISH) => {
    // Deflate never grows a text by more than a few bytes per 16 kB block.
    if (out.length < text.length + 1024) out = Buffer.allocUnsafe(text.length * 2 + 1024);
    handle.writeSync(flush, text, 0, text.length, out, 0, out.length);
    const [availOut, availIn] = state;
    handle.reset();
    if (availIn !== 0 || availOut === 0 || stream.destroyed)
      return zlib.deflateRawSync(text, flush === Z_FINISH ? options : sync);
    // A copy: the next text is deflated into the same buffer.
    return Buffer.from(out.subarray(0, out.length - availOut));
  };
}

const deflateData = reusableDeflateRaw(zlib, DATA_DEFLATE_OPTIONS);

export const encodeData = (data: unknown): Buffer => deflateData(Buffer.from(JSON.stringify(data)));

/**
 * Inflate with one zlib stream, reset after each text, into one output buffer, answering a copy of
 * exactly the text's length. `inflateRawSync` sets up and frees a stream (with its 32 kB window)
 * per call and answers a view of a 16 kB buffer however short the text: a feed page of 100 events
 * held 1.6 MB of external memory until collected, and the churn left native memory behind
 * (docs/decisions/0048-memory-budget.md). `inflateRawSync` where the handle is not there, and for
 * a text that does not fit, which it also sizes the buffer by.
 */
function reusableInflateRaw(): (stored: Uint8Array) => Buffer {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let stream: any;
  let out = Buffer.allocUnsafeSlow(64 * 1024);
  const { Z_FINISH } = zlib.constants;
  return (stored) => {
    // Corrupt data destroys the stream (inflateRawSync then throws the error); the next call starts another.
    if (stream === undefined || stream.destroyed) {
      stream = new zlib.InflateRaw();
      stream.on('error', () => {});
    }
    const handle = stream._handle;
    const state = stream._writeState;
    if (
      typeof handle?.writeSync !== 'function' ||
      typeof handle.reset !== 'function' ||
      !(state instanceof Uint32Array)
    )
      return inflateRawSync(stored);
    handle.writeSync(Z_FINISH, stored, 0, stored.length, out, 0, out.length);
    const [availOut, availIn] = state;
    if (!stream.destroyed) handle.reset();
    if (availIn !== 0 || availOut === 0 || stream.destroyed) {
      const text = inflateRawSync(stored);
      if (text.length >= out.length) out = Buffer.allocUnsafeSlow(text.length * 2);
      return text;
    }
    return Buffer.from(out.subarray(0, out.length - availOut));
  };
}

/** The stored data as the bytes of its JSON text, for answers put together without parsing it. */
export const decodeDataBytes = reusableInflateRaw();

/** The stored data as JSON text. */
export const decodeDataText = (stored: Uint8Array): string => decodeDataBytes(stored).toString('utf8');

export const decodeData = (stored: Uint8Array): unknown => JSON.parse(decodeDataText(stored));
