import * as zlib from 'node:zlib';
import { inflateRawSync } from 'node:zlib';

/**
 * An event's `data` as stored: its JSON, deflated (decision 0028). Events carry whole resources,
 * which compress well; level 1 compresses nearly as well as higher levels at less cost per write.
 */
export const DATA_DEFLATE_OPTIONS = { level: 1 } as const;

/**
 * A raw deflate stream of each text, as `deflateRawSync` makes, through one stream reset after each
 * text instead of a stream set up per call. Each inflates alone; its bytes may differ from
 * `deflateRawSync`'s, as the reset stream's leftover window can steer its choice of matches.
 * Self-contained (node:zlib and the options are arguments): the demo's deflate worker, a plain
 * script, runs its source too.
 */
export function reusableDeflateRaw(
  zlib: typeof import('node:zlib'),
  options: import('node:zlib').ZlibOptions,
): (text: Uint8Array, flush?: number) => Buffer {
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
 * One stream reset after each text, answering a copy of exactly the text's length: `inflateRawSync`
 * answers a view of a larger buffer and churns native memory (decision 0048). It still serves a
 * text that does not fit, and sizes the buffer.
 */
function reusableInflateRaw(): (stored: Uint8Array) => Buffer {
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

export const decodeDataText = (stored: Uint8Array): string => decodeDataBytes(stored).toString('utf8');

export const decodeData = (stored: Uint8Array): unknown => JSON.parse(decodeDataText(stored));
