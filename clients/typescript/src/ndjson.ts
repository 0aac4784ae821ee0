import { SupplylineConnectionError } from './errors.ts';

/**
 * The records of an NDJSON body, one at a time: only the line being read is held, so an export of
 * any size runs in constant memory. Stopping early (break, return) cancels the body.
 */
export async function* readNdjson<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let rest = '';
  try {
    for (;;) {
      // A body cut mid-way fails the read with the runtime's own error ("terminated"): said as the client's.
      const { done, value } = await reader.read().catch((error: unknown) => {
        throw new SupplylineConnectionError(error);
      });
      rest += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let start = 0;
      for (let end: number; (end = rest.indexOf('\n', start)) >= 0; start = end + 1) {
        const line = rest.slice(start, end);
        if (line.trim()) yield JSON.parse(line) as T;
      }
      rest = rest.slice(start);
      if (done) break;
    }
    if (rest.trim()) yield JSON.parse(rest) as T;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
