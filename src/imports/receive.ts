import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { Db } from '../db/types.ts';
import { ApiError, badRequest } from '../lib/errors.ts';
import { MAX_LINE_BYTES, NOT_UTF8, STARTS_WITH_NUL, TOO_LONG } from './lines.ts';
import { deleteChunks, insertChunk } from './repository.ts';

/** Lines are stored in runs of about this many bytes: memory per upload stays near it. */
const RUN_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

export interface Received {
  bytes: number;
  lines: number;
  /** sha256 of the file, as hex. */
  sha256: string;
}

export const UPLOAD_CUT_OFF = 'The upload broke off before its end: send the whole file again';

/**
 * The upload's pieces; a failure of the stream itself (its client reset or closed the connection)
 * is the client's doing, a 400, never taken for a failure of the database the caller writes to.
 */
async function* piecesOf(body: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield* body;
  } catch (error) {
    throw error instanceof ApiError ? error : badRequest(UPLOAD_CUT_OFF);
  }
}

/**
 * Reads an NDJSON upload into runs of whole lines (`import_chunks`), never holding more than a run
 * and one line in memory; with `store` false, only counts and hashes it (a repeat under an
 * Idempotency-Key). A line longer than MAX_LINE_BYTES is kept as a marker that fails that line.
 * Past `maxBytes` it stops with 413 and removes what it stored; so it does when the upload breaks off.
 */
export async function receiveFile(
  db: Db,
  body: AsyncIterable<Buffer>,
  target: { importId: string; now: string; maxBytes: number; store: boolean },
): Promise<Received> {
  const hash = createHash('sha256');
  let bytes = 0;
  let lineNo = 0;
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let tooLong = false;
  let run: Buffer[] = [];
  let runBytes = 0;
  let runFirst = 1;

  const flush = async () => {
    if (run.length === 0) return;
    const data = Buffer.allocUnsafe(runBytes - 1);
    let at = 0;
    run.forEach((line, i) => {
      at += line.copy(data, at);
      if (i < run.length - 1) data[at++] = NEWLINE;
    });
    if (target.store)
      await insertChunk(db, {
        importId: target.importId,
        firstLine: runFirst,
        lineCount: run.length,
        data,
        now: target.now,
      });
    runFirst += run.length;
    run = [];
    runBytes = 0;
  };
  const endLine = async (last: Buffer) => {
    lineNo++;
    let line = tooLong ? Buffer.from(TOO_LONG) : partial.length === 0 ? last : Buffer.concat([...partial, last]);
    // Decoded, it would hold U+FFFD where its bytes were: the line fails instead, as such a body would.
    if (!tooLong && !isUtf8(line)) line = Buffer.from(NOT_UTF8);
    // Only the stand-ins above begin with a NUL: a line of the file that does must not pass for one.
    else if (!tooLong && line[0] === 0) line = Buffer.from(STARTS_WITH_NUL);
    partial = [];
    partialBytes = 0;
    tooLong = false;
    run.push(line);
    runBytes += line.length + 1;
    if (runBytes >= RUN_BYTES) await flush();
  };
  const addPart = (part: Buffer) => {
    if (tooLong) return;
    partialBytes += part.length;
    if (partialBytes > MAX_LINE_BYTES) {
      tooLong = true;
      partial = [];
    } else {
      // A copy: the stream may reuse its buffer.
      partial.push(Buffer.from(part));
    }
  };

  try {
    for await (const piece of piecesOf(body)) {
      bytes += piece.length;
      if (bytes > target.maxBytes) {
        throw new ApiError(
          'PAYLOAD_TOO_LARGE',
          `The import file is larger than ${target.maxBytes} bytes (IMPORT_MAX_BYTES)`,
        );
      }
      hash.update(piece);
      let from = 0;
      for (let at = piece.indexOf(NEWLINE); at !== -1; at = piece.indexOf(NEWLINE, from)) {
        const part = piece.subarray(from, at);
        if (tooLong || partialBytes + part.length > MAX_LINE_BYTES) {
          addPart(part);
          await endLine(Buffer.alloc(0));
        } else {
          await endLine(Buffer.from(part));
        }
        from = at + 1;
      }
      if (from < piece.length) addPart(piece.subarray(from));
    }
    // The last line needs no newline after it.
    if (partialBytes > 0 || tooLong) await endLine(Buffer.alloc(0));
    await flush();
  } catch (error) {
    if (target.store) await deleteChunks(db, target.importId);
    throw error;
  }
  return { bytes, lines: lineNo, sha256: hash.digest('hex') };
}
