import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import { isUniqueViolation } from '../db/dialect.ts';
import type { Database, Db } from '../db/types.ts';
import { canonicalJson, readJson } from '../lib/json.ts';
import { ApiError, badRequest, errorBody } from './errors.ts';

export interface WriteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type WriteWork = (trx: Transaction<Database>) => Promise<WriteResult>;

/**
 * Runs a write in one transaction and sends its result, honouring `Idempotency-Key`. It resolves
 * once the answer is sent (it awaits the reply, as Fastify asks of a handler that calls send), so
 * that Fastify never tries to send a second one.
 */
export type RunWrite = (request: FastifyRequest, reply: FastifyReply, work: WriteWork) => Promise<void>;

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

function fingerprintOf(request: FastifyRequest): string {
  return createHash('sha256')
    // The route's path without a trailing slash, so /items and /items/ are one request.
    .update(`${request.method} ${request.url.replace(/\/+(?=\?|$)/, '')}\n${canonicalJson(request.body ?? null)}`)
    .digest('hex');
}

async function send(reply: FastifyReply, result: WriteResult, replayed = false): Promise<void> {
  reply.code(result.status);
  if (result.headers) reply.headers(result.headers);
  if (replayed) reply.header('idempotent-replayed', 'true');
  await reply.send(result.body === undefined ? null : result.body);
}

async function findRecord(db: Db, businessId: string, key: string) {
  return db.selectFrom('idempotency_keys').selectAll()
    .where('business_id', '=', businessId).where('key', '=', key).executeTakeFirst();
}

type StoredRecord = NonNullable<Awaited<ReturnType<typeof findRecord>>>;

function replay(reply: FastifyReply, record: StoredRecord, fingerprint: string): Promise<void> {
  if (record.fingerprint !== fingerprint) {
    throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
  }
  const body = record.response_body === '' ? undefined : JSON.parse(record.response_body);
  // A replayed error names this request, so its requestId matches the X-Request-Id header.
  if (record.response_status >= 400 && body && typeof body === 'object') body.requestId = reply.request.id;
  return send(reply, {
    status: record.response_status,
    body,
    headers: readJson<Record<string, string>>(record.response_headers) ?? undefined,
  }, true);
}

/** 4xx answers other than validation are part of the outcome and are replayed; 400 and 5xx are not. */
function isStorable(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status > 400 && error.status < 500
    && error.code !== 'IDEMPOTENCY_KEY_IN_USE' && error.code !== 'IDEMPOTENCY_KEY_REUSED' && error.code !== 'UNAUTHORIZED'
    && error.code !== 'RATE_LIMITED';
}

/**
 * The record is inserted first inside the write's own transaction and completed before commit,
 * so a write never exists without its record, nor a record without its write. A concurrent twin
 * on another instance blocks on the record's primary key, then finds it and replays.
 */
export function createRunWrite(db: Kysely<Database>, ttlHours: number, clock: () => number = Date.now): RunWrite {
  const inFlight = new Set<string>();

  return async (request, reply, work) => {
    const key = request.headers['idempotency-key'];
    if (key === undefined) return send(reply, await db.transaction().execute(work));
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw badRequest('Invalid idempotency key format');

    const businessId = request.businessId;
    const fingerprint = fingerprintOf(request);
    const now = new Date(clock());
    const existing = await findRecord(db, businessId, key);
    if (existing && new Date(existing.expires_at).getTime() > now.getTime()) return replay(reply, existing, fingerprint);
    if (existing) {
      await db.deleteFrom('idempotency_keys').where('business_id', '=', businessId).where('key', '=', key)
        .where('expires_at', '<=', now.toISOString()).execute();
    }

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
      expires_at: new Date(now.getTime() + ttlHours * 3_600_000).toISOString(),
    };
    const complete = (result: WriteResult) => ({
      response_status: result.status,
      response_headers: result.headers ? JSON.stringify(result.headers) : null,
      response_body: result.body === undefined ? '' : JSON.stringify(result.body),
    });
    try {
      const result = await db.transaction().execute(async (trx) => {
        await trx.insertInto('idempotency_keys').values({ ...record, response_status: 0, response_body: '' }).execute();
        const outcome = await work(trx);
        await trx.updateTable('idempotency_keys').set(complete(outcome))
          .where('business_id', '=', businessId).where('key', '=', key).execute();
        return outcome;
      });
      return send(reply, result);
    } catch (error) {
      if (isUniqueViolation(error)) {
        const winner = await findRecord(db, businessId, key);
        if (winner) return replay(reply, winner, fingerprint);
      }
      if (isStorable(error)) {
        const outcome = { status: error.status, body: errorBody(error, request.id) };
        await db.insertInto('idempotency_keys').values({ ...record, ...complete(outcome) })
          .onConflict((oc) => oc.doNothing()).execute();
      }
      throw error;
    } finally {
      inFlight.delete(slot);
    }
  };
}

/** Deletes expired records; run on a timer so the table stays the size of one TTL of traffic. */
export async function purgeExpiredIdempotencyKeys(db: Db, now = new Date()): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now.toISOString()).executeTakeFirst();
  return Number(result.numDeletedRows);
}
