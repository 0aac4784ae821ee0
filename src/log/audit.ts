import { sql } from 'kysely';
import type { Db } from '../db/types.ts';
import { fetchPage, type Page, type Paging } from '../db/list.ts';
import type { NewEvent } from './events.ts';
import { newId } from '../lib/ids.ts';
import { readJson } from '../lib/json.ts';
import { toIso } from '../lib/time.ts';
import type { AuditEvent } from '../audit/schema.ts';

/** The changes the trail keeps: to keys (and so their scopes and allowlists), users (and their roles) and webhook endpoints. */
const AUDITED = new Set(['api_key', 'user', 'webhook_endpoint']);

/** Kept this long, then purged by the jobs registry. */
export const AUDIT_RETENTION_DAYS = 400;

/** In the write's own transaction, so a change and its record commit together or not at all. */
export async function recordChanges(
  trx: Db,
  write: { businessId: string; actor: { type: string; id: string }; requestId: string | null; now: string },
  events: NewEvent[],
): Promise<void> {
  const audited = events.filter((e) => AUDITED.has(e.resourceType));
  if (audited.length === 0) return;
  await trx
    .insertInto('audit_events')
    .values(
      audited.map((e) => ({
        id: newId('aud'),
        business_id: write.businessId,
        created_at: write.now,
        kind: e.type,
        actor_type: write.actor.type,
        actor_id: write.actor.id,
        key_prefix: null,
        address: null,
        request_id: write.requestId,
        method: null,
        path: null,
        reason: null,
        subject_id: e.resourceId,
        detail: JSON.stringify(e.changes ? { changes: e.changes } : { object: e.object }),
      })),
    )
    .execute();
}

/** A request the API guard (src/http/auth.ts) refused with 401 or 403: never the key itself. */
export interface Refusal {
  businessId: string;
  status: 401 | 403;
  keyId: string | null;
  keyPrefix: string | null;
  address: string;
  requestId: string;
  method: string;
  path: string;
  reason: string;
}

/**
 * Refusals recorded of one business a minute, on an instance: the trail is kept 400 days, and
 * strangers choose what a refusal's row says.
 */
export const REFUSALS_PER_MINUTE = 60;
/** Businesses followed at once; made-up business ids (which leave no row) would grow it without end. */
const FOLLOWED = 10_000;

/**
 * Which refusals are recorded: a business's first REFUSALS_PER_MINUTE of each minute. The first one
 * recorded after some were left out says how many.
 */
export class RefusalSampler {
  readonly #minutes = new Map<string, { start: number; recorded: number; left: number }>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** The reason to record the refusal with, or null to leave it out. */
  take(businessId: string, reason: string): string | null {
    const now = this.#now();
    let minute = this.#minutes.get(businessId);
    if (!minute || now - minute.start >= 60_000) {
      if (!minute && this.#minutes.size >= FOLLOWED) this.#minutes.clear();
      minute = { start: now, recorded: 0, left: minute?.left ?? 0 };
      this.#minutes.set(businessId, minute);
    }
    if (minute.recorded >= REFUSALS_PER_MINUTE) {
      minute.left++;
      return null;
    }
    minute.recorded++;
    const left = minute.left;
    minute.left = 0;
    return left === 0 ? reason : `${reason} (${left} more refused before it were not recorded)`;
  }
}

/** One statement, outside any write; a made-up X-Business-Id leaves no row. */
export async function recordRefusal(db: Db, r: Refusal, now: string): Promise<void> {
  const row = {
    id: newId('aud'),
    business_id: r.businessId,
    created_at: now,
    kind: r.status === 401 ? 'request.unauthorized' : 'request.forbidden',
    actor_type: 'api_key',
    actor_id: r.keyId,
    key_prefix: r.keyPrefix,
    address: r.address,
    request_id: r.requestId,
    method: r.method,
    path: r.path.slice(0, 500),
    reason: r.reason,
    subject_id: null,
    detail: null,
  };
  const columns = Object.keys(row) as Array<keyof typeof row>;
  await db
    .insertInto('audit_events')
    .columns(columns)
    .expression(
      db
        .selectNoFrom(columns.map((c) => sql`${row[c]}`.as(c)) as never)
        .where(sql<boolean>`exists (select 1 from businesses where id = ${r.businessId})`) as never,
    )
    .execute();
}

export interface AuditFilter {
  /** Made by this key, or about it. */
  keyId?: string;
  /** A kind (`api_key.revoked`) or every kind of a resource (`api_key.*`). */
  kind?: string;
  since?: string;
  until?: string;
}

/** A business's trail, newest first, by page or cursor. */
export async function listAuditEvents(
  db: Db,
  businessId: string,
  filter: AuditFilter,
  paging: Paging,
): Promise<Page<AuditEvent>> {
  let query = db.selectFrom('audit_events').selectAll().where('business_id', '=', businessId);
  if (filter.keyId)
    query = query.where((eb) => eb.or([eb('actor_id', '=', filter.keyId!), eb('subject_id', '=', filter.keyId!)]));
  if (filter.kind?.endsWith('.*'))
    query = query.where(sql<boolean>`kind like ${`${filter.kind.slice(0, -1).replace(/_/g, '\\_')}%`} escape '\\'`);
  else if (filter.kind) query = query.where('kind', '=', filter.kind);
  if (filter.since) query = query.where('created_at', '>=', filter.since);
  if (filter.until) query = query.where('created_at', '<', filter.until);
  return fetchPage(query, paging, async (rows) =>
    rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      occurredAt: toIso(r.created_at),
      actor: { type: r.actor_type, id: r.actor_id },
      keyPrefix: r.key_prefix,
      address: r.address,
      requestId: r.request_id,
      method: r.method,
      path: r.path,
      reason: r.reason,
      subjectId: r.subject_id,
      detail: readJson(r.detail),
    })),
  );
}

export async function purgeAuditEventsBefore(db: Db, before: string): Promise<void> {
  await db.deleteFrom('audit_events').where('created_at', '<', before).execute();
}
