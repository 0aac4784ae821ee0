import type { Kysely, Transaction } from 'kysely';
import { isUniqueViolation } from '../db/dialect.ts';
import type { Database } from '../db/types.ts';
import { ApiError, errorBody } from '../lib/errors.ts';
import { readJson } from '../lib/json.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import {
  completeRecord,
  deleteExpiredRecord,
  findRecord,
  insertRecord,
  type IdempotencyRecord,
  type StoredResponse,
} from './idempotency-records.ts';

/** A response a write answers with, as it is stored for replay under an Idempotency-Key. */
export interface WriteResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body shows a secret: stored for replay encrypted with the runner's SecretBox, never as it is. */
  sealed?: boolean;
}

export interface Idempotency {
  key: string;
  /** The hash of the request (method, path, body): the same key with another request is refused. */
  fingerprint: string;
}

export type Replayable = { response: WriteResponse; replayed: boolean };

/**
 * 4xx answers other than validation are part of the outcome and are replayed; 400 and 5xx are not,
 * nor is a 412: `If-Match` is not part of the request's fingerprint, and the retry the guides ask
 * for (fetch again, re-apply, send with the same key) carries the current ETag, and must run.
 */
function isStorable(error: unknown): error is ApiError {
  return (
    error instanceof ApiError &&
    error.status > 400 &&
    error.status < 500 &&
    error.code !== 'PRECONDITION_FAILED' &&
    error.code !== 'IDEMPOTENCY_KEY_IN_USE' &&
    error.code !== 'IDEMPOTENCY_KEY_REUSED' &&
    error.code !== 'UNAUTHORIZED' &&
    error.code !== 'RATE_LIMITED'
  );
}

const SEALED = 'sealed:';

function stored(response: WriteResponse, box?: SecretBox): StoredResponse {
  const body = response.body === undefined ? '' : JSON.stringify(response.body);
  if (response.sealed && !box)
    throw new Error('A response that shows a secret needs the write runner to have a SecretBox');
  return {
    response_status: response.status,
    response_headers: response.headers ? JSON.stringify(response.headers) : null,
    response_body: response.sealed ? SEALED + box!.seal(body) : body,
  };
}

function replay(record: IdempotencyRecord, fingerprint: string, box?: SecretBox): Replayable {
  if (record.fingerprint !== fingerprint) {
    throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
  }
  const text =
    record.response_body.startsWith(SEALED) && box
      ? box.open(record.response_body.slice(SEALED.length))
      : record.response_body;
  return {
    response: {
      status: record.response_status,
      body: text === '' ? undefined : JSON.parse(text),
      headers: readJson<Record<string, string>>(record.response_headers) ?? undefined,
    },
    replayed: true,
  };
}

export interface IdempotencyOptions {
  ttlMs: number;
  clock: () => number;
  box?: SecretBox;
  /** The keys of this instance's writes still running, by business (`business\u0000key`). */
  inFlight: Set<string>;
}

/*
 * The record is inserted first inside the write's own transaction and completed before commit,
 * so a write never exists without its record, nor a record without its write. A concurrent twin
 * on another instance blocks on the record's primary key, then finds it and replays.
 */
export async function runIdempotent<Ctx extends { trx: Transaction<Database> }>(
  db: Kysely<Database>,
  options: IdempotencyOptions,
  scope: { businessId: string; requestId?: string },
  { key, fingerprint }: Idempotency,
  inTransaction: (key: string, work: (ctx: Ctx) => Promise<WriteResponse>) => Promise<WriteResponse>,
  work: (ctx: Ctx) => Promise<WriteResponse>,
): Promise<Replayable> {
  const { businessId } = scope;
  const now = new Date(options.clock());
  const existing = await findRecord(db, businessId, key);
  if (existing && new Date(existing.expires_at).getTime() > now.getTime())
    return replay(existing, fingerprint, options.box);
  if (existing) await deleteExpiredRecord(db, businessId, key, now.toISOString());

  const { inFlight, ttlMs } = options;
  const slot = `${businessId}\u0000${key}`;
  if (inFlight.has(slot)) {
    throw new ApiError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed');
  }
  inFlight.add(slot);
  const record = {
    business_id: businessId,
    key,
    fingerprint,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + ttlMs).toISOString(),
  };
  try {
    const response = await inTransaction(key, async (ctx) => {
      await insertRecord(ctx.trx, { ...record, response_status: 0, response_body: '', response_headers: null });
      const outcome = await work(ctx);
      await completeRecord(ctx.trx, businessId, key, stored(outcome, options.box));
      return outcome;
    });
    return { response, replayed: false };
  } catch (error) {
    if (isUniqueViolation(error)) {
      const winner = await findRecord(db, businessId, key);
      if (winner) return replay(winner, fingerprint, options.box);
    }
    if (isStorable(error)) {
      // Outside the failed transaction: one statement, nothing else to keep consistent with.
      await insertRecord(
        db,
        { ...record, ...stored({ status: error.status, body: errorBody(error, scope.requestId ?? '') }) },
        true,
      );
    }
    throw error;
  } finally {
    inFlight.delete(slot);
  }
}
