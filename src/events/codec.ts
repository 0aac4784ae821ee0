import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * An event's `data` as stored: its JSON, deflated at level 1. Events carry the whole resource,
 * and JSON of that shape compresses about seven times (an order of 10 items: 5.1 kB to 0.7 kB),
 * which is the difference between a busy business's year of events fitting comfortably on a
 * disk and not. Level 1 compresses nearly as well as 6 and costs less in every write (measured
 * in process: the deflate was the largest part of appending an event).
 */
export const DATA_DEFLATE_OPTIONS = { level: 1 } as const;

export const encodeData = (data: unknown): Buffer => deflateRawSync(JSON.stringify(data), DATA_DEFLATE_OPTIONS);

/** The stored data as the bytes of its JSON text, for answers put together without parsing it. */
export const decodeDataBytes = (stored: Uint8Array): Buffer => inflateRawSync(stored);

/** The stored data as JSON text. */
export const decodeDataText = (stored: Uint8Array): string => decodeDataBytes(stored).toString('utf8');

export const decodeData = (stored: Uint8Array): unknown => JSON.parse(decodeDataText(stored));
