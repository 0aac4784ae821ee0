import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { it } from 'node:test';
import { MAX_LINE_BYTES, NOT_UTF8, TOO_LONG } from '../../src/imports/lines.ts';
import { receiveFile } from '../../src/imports/receive.ts';
import { describeEachBackend } from '../helpers/context.ts';

/** The body in pieces of `size` bytes, as a slow upload arrives. */
async function* pieces(body: Buffer, size: number): AsyncIterable<Buffer> {
  for (let at = 0; at < body.length; at += size) yield body.subarray(at, at + size);
}

/**
 * How an upload becomes stored lines (src/imports/receive.ts), whatever the pieces it arrives in:
 * a character split between two pieces is still one character, and only a line whose own bytes are
 * not UTF-8, or that is too long, is stored as the marker that fails it.
 */
describeEachBackend('receiving an import file', (ctx) => {
  it('stores the same lines whether the upload arrives whole or a few bytes at a time', async () => {
    const latin1 = Buffer.from([0x7b, 0x22, 0x43, 0x61, 0x66, 0xe9, 0x22, 0x7d]); // {"Caf\xe9"}: Latin-1
    const long = `{"name":"${'é'.repeat(MAX_LINE_BYTES / 2)}"}`;
    const files = [
      // Short lines, in pieces small enough to split every character of two to four bytes.
      { lines: ['{"name":"Café au lait"}', '{"name":"日本茶 🍵"}', latin1, '{"name":"Ünïcödé"}'], sizes: [1, 2, 3, 7] },
      // A line too long to keep, between two others, in larger pieces.
      { lines: ['{"name":"ß"}', long, '{"name":"€"}'], sizes: [4093, 65536] },
    ];
    let n = 0;
    for (const { lines, sizes } of files) {
      // The last line has no newline after it.
      const body = Buffer.concat(
        lines.flatMap((l, i) => [Buffer.from(l), Buffer.from(i < lines.length - 1 ? '\n' : '')]),
      );
      const expected = lines.map((l) => (l === latin1 ? NOT_UTF8 : l === long ? TOO_LONG : l));
      for (const size of [...sizes, body.length]) {
        const importId = `imp_receive_${n++}`;
        const received = await receiveFile(ctx().db, pieces(body, size), {
          importId,
          now: new Date().toISOString(),
          maxBytes: 10 * 1024 * 1024,
          store: true,
        });
        assert.deepEqual(received, {
          bytes: body.length,
          lines: lines.length,
          sha256: createHash('sha256').update(body).digest('hex'),
        });
        const chunks = await ctx()
          .db.selectFrom('import_chunks')
          .selectAll()
          .where('import_id', '=', importId)
          .orderBy('first_line')
          .execute();
        const stored = chunks.flatMap((c) => Buffer.from(c.data).toString('utf8').split('\n'));
        assert.deepEqual(stored, expected, `pieces of ${size} bytes`);
      }
    }
  });
});
