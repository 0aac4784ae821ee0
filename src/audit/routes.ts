import type { ApiInstance, RouteDeps } from '../http/types.ts';
import { listAuditEvents } from '../log/audit.ts';
import { parseDateTime } from '../lib/time.ts';
import { AuditEventPage, ListAuditEventsQuery } from './schema.ts';

/** The audit trail, for keys with audit:read (the console shows owners the same). */
export async function auditRoutes(app: ApiInstance, { db, cursors }: RouteDeps): Promise<void> {
  app.get(
    '/audit-events',
    {
      config: { extension: true },
      schema: {
        tags: ['Audit'],
        operationId: 'listAuditEvents',
        summary:
          'The audit trail: who changed keys, users and webhook endpoints, and every refused request (kept 400 days)',
        description:
          'Newest first. Changes to API keys (and so their scopes and allowlists), console users (and their roles) and ' +
          'webhook endpoints, and every request refused with 401 or 403: who, which key prefix, from which address, and why.',
        querystring: ListAuditEventsQuery,
        response: { 200: AuditEventPage },
      },
    },
    async (request) => {
      const { keyId, kind } = request.query;
      // Compared as stored (UTC, milliseconds): any RFC 3339 spelling of the instant is one.
      const since = request.query.since === undefined ? undefined : parseDateTime(request.query.since);
      const until = request.query.until === undefined ? undefined : parseDateTime(request.query.until);
      return cursors.list(request, 'audit-events', (paging) =>
        listAuditEvents(db, request.businessId, { keyId, kind, since, until }, paging),
      );
    },
  );
}
