import type { FastifyInstance } from 'fastify';
import { findImport, listImports } from '../imports/repository.ts';
import { resultsStream } from '../imports/results.ts';
import { ApiError } from '../lib/errors.ts';
import type { ConsoleKit } from './kit.ts';

/** Imports (every role): the latest 50 with their progress, and each one's results to download. */
export function registerImportPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, idOf } = kit;
  const { db, clock } = kit.deps;

  app.get('/console/imports', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const found = await listImports(db, user.businessId, { page: 1, limit: 50 }, clock());
    return page(reply, 'imports.eta', user, {
      title: 'Imports',
      section: 'imports',
      imports: found.items,
      total: found.total,
    });
  });

  app.get('/console/imports/:id/results', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const imp = await findImport(db, user.businessId, idOf(request));
    if (!imp) throw new ApiError('NOT_FOUND', 'No such import.');
    return reply
      .type('application/x-ndjson; charset=utf-8')
      .header('content-disposition', `attachment; filename="${imp.id}-results.ndjson"`)
      .send(resultsStream(db, imp.id));
  });
}
