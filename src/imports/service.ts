import { createHash } from 'node:crypto';
import type { Scope } from '../businesses/scopes.ts';
import { isUniqueViolation } from '../db/dialect.ts';
import type { Db } from '../db/types.ts';
import { ApiError, badRequest, conflict } from '../lib/errors.ts';
import { writesClosed } from '../write/clock.ts';
import { newId } from '../lib/ids.ts';
import { receiveFile } from './receive.ts';
import { deleteChunks, findImportByKey, insertImport, NO_COUNTS, type ImportRow } from './repository.ts';

export interface ImportOptions {
  dryRun: boolean;
  onError: 'continue' | 'stop';
}

export interface NewImport {
  businessId: string;
  /** The API key that sends it, or `cli`: the actor of its writes. */
  actorId: string;
  /** The sender's scopes (null: every scope), which each line is held to. */
  scopes: Scope[] | null;
  idempotencyKey: string | null;
  options: ImportOptions;
  body: AsyncIterable<Buffer>;
  now: string;
  maxBytes: number;
}

/**
 * Receives an import file whole (src/imports/receive.ts) and records the import, queued for the
 * workers. Under an Idempotency-Key already used, the file is only hashed: the same file and options
 * answer the earlier import (`replayed`), another is 422.
 */
export async function receiveImport(db: Db, input: NewImport): Promise<{ imp: ImportRow; replayed: boolean }> {
  const { businessId, idempotencyKey: key, options } = input;
  const fingerprintOf = (sha256: string) =>
    createHash('sha256')
      .update(`${JSON.stringify(options)}\n${sha256}`)
      .digest('hex');
  const replay = (existing: ImportRow, fingerprint: string) => {
    if (existing.fingerprint !== fingerprint) {
      throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
    }
    return { imp: existing, replayed: true };
  };

  // Received outside any write: refused as a write would be while its business is closed (a sandbox reset or deleted).
  const closed = await writesClosed(db, businessId);
  if (closed !== null) throw conflict(closed);
  const earlier = key === null ? undefined : await findImportByKey(db, businessId, key);
  const id = newId('imp');
  const received = await receiveFile(db, input.body, {
    importId: id,
    now: input.now,
    maxBytes: input.maxBytes,
    store: !earlier,
  });
  const fingerprint = fingerprintOf(received.sha256);
  if (earlier) return replay(earlier, fingerprint);
  if (received.lines === 0) throw badRequest('The import file is empty: send one JSON object per line');
  const row = {
    id,
    business_id: businessId,
    created_at: input.now,
    created_by: input.actorId,
    scopes: input.scopes === null ? null : JSON.stringify(input.scopes),
    idempotency_key: key,
    fingerprint,
    options: JSON.stringify(options),
    state: 'QUEUED',
    bytes: received.bytes,
    total_lines: received.lines,
    lines_done: 0,
    counts: JSON.stringify(NO_COUNTS),
    started_at: null,
    finished_at: null,
    lease_owner: null,
    lease_until: null,
  } satisfies ImportRow;
  try {
    await insertImport(db, row);
  } catch (error) {
    await deleteChunks(db, id);
    // The same key sent twice at once: the one that got there first is the import.
    const winner = key !== null && isUniqueViolation(error) ? await findImportByKey(db, businessId, key) : undefined;
    if (winner) return replay(winner, fingerprint);
    throw error;
  }
  return { imp: row, replayed: false };
}
