import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import { anyOf, anyOfNumbers } from '../db/dialect.ts';
import { eventJson } from '../events/mapper.ts';
import { isLiveBusiness } from '../businesses/repository.ts';
import { jsonWithoutMargin } from '../businesses/margin.ts';
import { groupBy } from '../lib/group.ts';
import type { SecretBox } from '../lib/secret-box.ts';
import type { Claim } from './queue.ts';
import type { EndpointRow } from './repository.ts';
import { signatureHeader } from './signature.ts';

export interface ClaimedEndpoint {
  row: EndpointRow;
  /** The current secret, and the previous one while its grace period may still run. */
  secrets: string[];
}

/**
 * What a batch of claims needs: each event's body as the feed shows it, and each endpoint with its
 * secrets (read per batch, so a rotation applies to the next claim; decrypted once and kept).
 */
export function createPayloadLoader(
  db: Kysely<Database>,
  box: SecretBox,
  onUnreadable: (endpointId: string, error: unknown) => void,
) {
  const opened = new Map<string, string>();

  function openSecret(sealed: string): string {
    let plain = opened.get(sealed);
    if (plain === undefined) {
      plain = box.open(sealed);
      if (opened.size > 10_000) opened.clear();
      opened.set(sealed, plain);
    }
    return plain;
  }

  /** Each claim's body, and its event's `traceparent` where there is one. */
  async function bodies(claims: Claim[], traceParents: Map<string, string>): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const [businessId, group] of groupBy(
      claims.filter((c) => c.payload === null),
      (c) => c.business_id,
    )) {
      const rows = await db
        .selectFrom('events')
        .selectAll()
        .where('business_id', '=', businessId)
        .where(
          anyOfNumbers(
            db,
            'sequence',
            group.map((c) => Number(c.sequence)),
          ),
        )
        .execute();
      const bySequence = new Map(rows.map((r) => [Number(r.sequence), r]));
      const livemode = await isLiveBusiness(db, businessId);
      for (const claim of group) {
        const row = bySequence.get(Number(claim.sequence));
        if (row) found.set(claim.id, eventJson(row, livemode));
        if (row?.trace_parent) traceParents.set(claim.id, row.trace_parent);
      }
    }
    for (const claim of claims) if (claim.payload !== null) found.set(claim.id, claim.payload);
    return found;
  }

  async function endpoints(claims: Claim[]): Promise<Map<string, ClaimedEndpoint>> {
    const ids = [...new Set(claims.map((c) => c.endpoint_id))];
    const rows = await db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where(anyOf(db, 'id', ids))
      .execute();
    const found = new Map<string, ClaimedEndpoint>();
    for (const row of rows) {
      try {
        found.set(row.id, {
          row,
          secrets: [openSecret(row.secret), ...(row.previous_secret ? [openSecret(row.previous_secret)] : [])],
        });
      } catch (error) {
        // A secret SECRET_KEY cannot open: this endpoint's deliveries wait (leases lapse), the others go.
        onUnreadable(row.id, error);
      }
    }
    return found;
  }

  return {
    async load(claims: Claim[]) {
      const traceParents = new Map<string, string>();
      const [found, byId] = await Promise.all([bodies(claims, traceParents), endpoints(claims)]);
      for (const claim of claims) {
        const body = found.get(claim.id);
        if (body !== undefined && byId.get(claim.endpoint_id)?.row.hides_margin)
          found.set(claim.id, jsonWithoutMargin(body));
      }
      return { bodies: found, endpoints: byId, traceParents };
    },
  };
}

/** Standard Webhooks headers: both secrets sign during a rotation's grace period. */
export function signedHeaders(
  endpoint: ClaimedEndpoint,
  eventId: string,
  body: string,
  now: number,
): Record<string, string> {
  const graceEnds =
    endpoint.row.previous_secret_expires_at === null ? 0 : new Date(endpoint.row.previous_secret_expires_at).getTime();
  const secrets = endpoint.secrets.length > 1 && graceEnds <= now ? endpoint.secrets.slice(0, 1) : endpoint.secrets;
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, eventId, timestamp, body),
  };
}
