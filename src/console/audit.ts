import type { FastifyInstance } from 'fastify';
import { listAuditEvents } from '../log/audit.ts';
import { ApiError } from '../lib/errors.ts';
import type { ConsoleKit } from './kit.ts';
import { actorNamesOf } from './names.ts';

const KIND = /^[a-z_]{1,32}\.(?:\*|[a-z_]{1,32})$/;

/** The audit trail (owners): the latest 100 entries, filtered by kind or key, as GET /api/v1/audit-events serves them. */
export function registerAuditPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, queryOf, problem } = kit;
  const { db } = kit.deps;

  app.get('/console/audit', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const q = queryOf(request);
    const view = {
      title: 'Audit trail',
      section: 'audit',
      q,
      entries: [] as unknown[],
      names: new Map<string, string>(),
    };
    try {
      if (q.kind && !KIND.test(q.kind))
        throw new ApiError('VALIDATION_ERROR', 'A kind is like api_key.revoked or request.*.');
      if (q.keyId && !/^[A-Za-z0-9_-]{1,64}$/.test(q.keyId))
        throw new ApiError('VALIDATION_ERROR', 'A key id is letters, digits, _ and -.');
      const found = await listAuditEvents(
        db,
        user.businessId,
        { kind: q.kind || undefined, keyId: q.keyId || undefined },
        { page: 1, limit: 100 },
      );
      return page(reply, 'audit.eta', user, {
        ...view,
        entries: found.items,
        total: found.total,
        names: await actorNamesOf(db, user.businessId),
      });
    } catch (error) {
      return page(reply.code(400), 'audit.eta', user, { ...view, error: problem(error) });
    }
  });
}
