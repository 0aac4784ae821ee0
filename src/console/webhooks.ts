import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { toEndpoint } from '../webhooks/mapper.ts';
import { findEndpointRow, listDeliveries, listEndpoints } from '../webhooks/repository.ts';
import { DELIVERY_STATUSES } from '../webhooks/schema.ts';
import { createEndpoint, replayRange, rotateSecret, sendTestEvent, updateEndpoint } from '../webhooks/service.ts';
import type { DeliveryStatus } from '../webhooks/table.ts';
import { GRACE_CHOICES, type ConsoleKit, type Form } from './kit.ts';
import type { SessionUser } from './session.ts';

/** Webhooks (owners and admins): the same services as the API's /webhook-endpoints, as the signed-in user. */
export function registerWebhookPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, page, signedIn, actorOf, idOf, queryOf, typesOf, problem, checkTypes } = kit;
  const { db, writes, clock } = kit.deps;
  const webhooksPage = async (reply: FastifyReply, user: SessionUser, extra: Record<string, unknown> = {}) => {
    const { items } = await listEndpoints(db, user.businessId, { page: 1, limit: 100 }, new Date(clock()).toISOString());
    return page(reply, 'webhooks.eta', user, { title: 'Webhooks', section: 'webhooks', endpoints: items, canEdit: true, ...extra });
  };

  app.get('/console/webhooks', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    return user ? webhooksPage(reply, user) : reply;
  });

  app.post('/console/webhooks', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const input = { url: String(form.url ?? '').trim().slice(0, 2048), description: form.description ? String(form.description).slice(0, 500) : null, eventTypes: checkTypes(typesOf(form.eventTypes)) };
      const { endpoint, secret } = await writes.run(actorOf(user), (ctx) => createEndpoint(ctx, input, deps.webhooks));
      deps.kickWebhooks();
      return webhooksPage(reply.code(201), user, { created: { url: endpoint.url, secret } });
    } catch (error) {
      return webhooksPage(reply.code(400), user, { error: problem(error) });
    }
  });

  const endpointPage = async (reply: FastifyReply, user: SessionUser, id: string, query: { status?: string; before?: string } = {}, extra: Record<string, unknown> = {}) => {
    const row = await findEndpointRow(db, user.businessId, id);
    if (!row) throw new ApiError('NOT_FOUND', 'No such webhook endpoint.');
    const filter = DELIVERY_STATUSES.includes(query.status as never) ? query.status as DeliveryStatus : undefined;
    const before = query.before && /^whd_[0-9a-z]{1,40}$/.test(query.before) ? query.before : undefined;
    const log = await listDeliveries(db, user.businessId, id, { status: filter, before, newestFirst: true, limit: 50 });
    const last = log.items[log.items.length - 1];
    const older = log.hasMore && last ? `/console/webhooks/${id}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), before: last.id })}` : null;
    return page(reply, 'webhook.eta', user, {
      title: 'Webhook endpoint', section: 'webhooks', endpoint: toEndpoint(row, new Date(clock()).toISOString()),
      deliveries: log.items, status: filter ?? '', older, canEdit: true, ...extra,
    });
  };

  app.get('/console/webhooks/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    return user ? endpointPage(reply, user, idOf(request), queryOf(request)) : reply;
  });

  app.post('/console/webhooks/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const status = ['enabled', 'paused', 'disabled'].includes(form.status) ? form.status as 'enabled' : undefined;
      await writes.run(actorOf(user), (ctx) => updateEndpoint(ctx, idOf(request), { eventTypes: checkTypes(typesOf(form.eventTypes)), status }, deps.webhooks));
      deps.kickWebhooks();
      return endpointPage(reply, user, idOf(request), {}, { notice: 'Saved.' });
    } catch (error) {
      return endpointPage(reply.code(400), user, idOf(request), {}, { error: problem(error) });
    }
  });

  app.post('/console/webhooks/:id/test', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    await writes.run(actorOf(user), (ctx) => sendTestEvent(ctx, idOf(request)));
    deps.kickWebhooks();
    return endpointPage(reply, user, idOf(request), {}, { notice: 'A webhook.test event is on its way; it shows in the log below.' });
  });

  app.post('/console/webhooks/:id/rotate', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const grace = Number((request.body as Form).graceSeconds);
    if (!GRACE_CHOICES.has(grace)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered grace periods.');
    const { secret } = await writes.run(actorOf(user), (ctx) => rotateSecret(ctx, idOf(request), grace, deps.webhooks));
    return endpointPage(reply, user, idOf(request), {}, { secret });
  });

  app.post('/console/webhooks/:id/replay', async (request, reply) => {
    const user = signedIn(request, reply, ['owner', 'admin']);
    if (!user) return reply;
    const form = request.body as Form;
    const after = Number(form.afterSequence);
    const until = Number(form.untilSequence);
    try {
      if (!Number.isSafeInteger(after) || !Number.isSafeInteger(until) || after < 0) throw new ApiError('VALIDATION_ERROR', 'Sequences are whole numbers.');
      await writes.run(actorOf(user), (ctx) => replayRange(ctx, idOf(request), after, until));
      deps.kickWebhooks();
      return endpointPage(reply, user, idOf(request), {}, { notice: `Replaying events ${after + 1} to ${until}.` });
    } catch (error) {
      return endpointPage(reply.code(400), user, idOf(request), {}, { error: problem(error) });
    }
  });
}
