import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { toEndpoint } from '../webhooks/mapper.ts';
import { findEndpointRow, listDeliveries, listEndpoints } from '../webhooks/repository.ts';
import { DELIVERY_STATUSES } from '../webhooks/schema.ts';
import { createEndpoint, deleteEndpoint, rotateSecret, updateEndpoint } from '../webhooks/service.ts';
import { replayRange, sendTestEvent } from '../webhooks/redelivery.ts';
import type { DeliveryStatus } from '../webhooks/table.ts';
import { GRACE_CHOICES, type ConsoleKit, type Form } from './kit.ts';
import type { SessionUser } from './session.ts';

const description = (form: Form) =>
  String(form.description ?? '')
    .trim()
    .slice(0, 500) || null;

/** Webhooks (owners and admins): the same services as the API's /webhook-endpoints, as the signed-in user. */
export function registerWebhookPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, page, signedIn, actorOf, idOf, queryOf, typesOf, checkTypes, act, done } = kit;
  const { db, writes, clock } = kit.deps;
  const editor = (request: FastifyRequest, reply: FastifyReply) => signedIn(request, reply, ['owner', 'admin']);
  const endpointOf = async (user: SessionUser, id: string) => {
    const row = await findEndpointRow(db, user.businessId, id);
    if (!row) throw new ApiError('NOT_FOUND', 'No such webhook endpoint.');
    return toEndpoint(row, new Date(clock()).toISOString());
  };

  app.get('/console/webhooks', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const { items } = await listEndpoints(
      db,
      user.businessId,
      { page: 1, limit: 100 },
      new Date(clock()).toISOString(),
    );
    return page(reply, 'webhooks.eta', user, {
      title: 'Webhooks',
      section: 'webhooks',
      endpoints: items,
      canEdit: true,
    });
  });

  app.post('/console/webhooks', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const form = request.body as Form;
    return act(reply, user, '/console/webhooks', async () => {
      const input = {
        url: String(form.url ?? '')
          .trim()
          .slice(0, 2048),
        description: description(form),
        eventTypes: checkTypes(typesOf(form.eventTypes)),
      };
      const { endpoint, secret } = await writes.run(actorOf(user), (ctx) => createEndpoint(ctx, input, deps.webhooks));
      deps.kickWebhooks();
      return {
        to: `/console/webhooks/${endpoint.id}`,
        notice: `Added ${endpoint.url}. Send a test event to check that your receiver answers.`,
        secret: {
          id: 'new-secret-value',
          title: 'Signing secret: copy it now',
          value: secret,
          note: 'Your receiver verifies each delivery with it (Standard Webhooks).',
        },
      };
    });
  });

  app.get('/console/webhooks/:id', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const id = idOf(request);
    const endpoint = await endpointOf(user, id);
    const query = queryOf(request);
    const filter = DELIVERY_STATUSES.includes(query.status as never) ? (query.status as DeliveryStatus) : undefined;
    const before = query.before && /^whd_[0-9a-z]{1,40}$/.test(query.before) ? query.before : undefined;
    const log = await listDeliveries(db, user.businessId, id, { status: filter, before, newestFirst: true, limit: 50 });
    const last = log.items[log.items.length - 1];
    const older =
      log.hasMore && last
        ? `/console/webhooks/${id}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), before: last.id })}`
        : null;
    return page(reply, 'webhook.eta', user, {
      title: 'Webhook endpoint',
      section: 'webhooks',
      endpoint,
      deliveries: log.items,
      status: filter ?? '',
      older,
      canEdit: true,
    });
  });

  app.post('/console/webhooks/:id', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const form = request.body as Form;
    const id = idOf(request);
    return act(reply, user, `/console/webhooks/${id}`, async () => {
      // Disabling drops the backlog, so it has its own button, which asks first.
      const status = ['enabled', 'paused'].includes(form.status) ? (form.status as 'enabled' | 'paused') : undefined;
      await writes.run(actorOf(user), (ctx) =>
        updateEndpoint(
          ctx,
          id,
          { eventTypes: checkTypes(typesOf(form.eventTypes)), description: description(form), status },
          deps.webhooks,
        ),
      );
      deps.kickWebhooks();
      return { notice: 'Saved.' };
    });
  });

  app.post('/console/webhooks/:id/test', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const id = idOf(request);
    await writes.run(actorOf(user), (ctx) => sendTestEvent(ctx, id));
    deps.kickWebhooks();
    return done(reply, user, `/console/webhooks/${id}`, {
      notice: 'A webhook.test event is on its way; it shows in the log below (reload to see its answer).',
    });
  });

  app.post('/console/webhooks/:id/rotate', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const id = idOf(request);
    const grace = Number((request.body as Form).graceSeconds);
    return act(reply, user, `/console/webhooks/${id}`, async () => {
      if (!GRACE_CHOICES.has(grace)) throw new ApiError('VALIDATION_ERROR', 'Choose one of the offered grace periods.');
      const { secret } = await writes.run(actorOf(user), (ctx) => rotateSecret(ctx, id, grace, deps.webhooks));
      const note =
        grace === 0
          ? 'The previous secret no longer signs.'
          : `The previous secret signs too until ${new Date(clock() + grace * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC.`;
      return {
        notice: 'Rotated the signing secret.',
        secret: { id: 'new-secret-value', title: 'New signing secret: copy it now', value: secret, note },
      };
    });
  });

  app.post('/console/webhooks/:id/replay', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const form = request.body as Form;
    const id = idOf(request);
    const after = Number(form.afterSequence);
    const until = Number(form.untilSequence);
    return act(reply, user, `/console/webhooks/${id}`, async () => {
      if (!Number.isSafeInteger(after) || !Number.isSafeInteger(until) || after < 0)
        throw new ApiError('VALIDATION_ERROR', 'Sequences are whole numbers.');
      await writes.run(actorOf(user), (ctx) => replayRange(ctx, id, after, until));
      deps.kickWebhooks();
      return { notice: `Replaying events ${after + 1} to ${until}.` };
    });
  });

  app.get('/console/webhooks/:id/disable', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const endpoint = await endpointOf(user, idOf(request));
    return page(reply, 'confirm.eta', user, {
      title: 'Disable endpoint',
      section: 'webhooks',
      heading: `Disable ${endpoint.url}?`,
      action: `/console/webhooks/${endpoint.id}/disable`,
      button: 'Disable',
      cancel: `/console/webhooks/${endpoint.id}`,
      message:
        'Nothing more is sent to it, and deliveries waiting for it are cancelled. ' +
        'Enabling it again starts from the next event; older ones can be replayed.',
    });
  });

  app.post('/console/webhooks/:id/disable', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const id = idOf(request);
    await writes.run(actorOf(user), (ctx) => updateEndpoint(ctx, id, { status: 'disabled' }, deps.webhooks));
    return done(reply, user, `/console/webhooks/${id}`, { notice: 'Disabled: nothing more is sent to this endpoint.' });
  });

  app.get('/console/webhooks/:id/delete', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const endpoint = await endpointOf(user, idOf(request));
    return page(reply, 'confirm.eta', user, {
      title: 'Delete endpoint',
      section: 'webhooks',
      heading: `Delete ${endpoint.url}?`,
      action: `/console/webhooks/${endpoint.id}/delete`,
      button: 'Delete',
      cancel: `/console/webhooks/${endpoint.id}`,
      message:
        'It goes from the list with its delivery log, and deliveries waiting for it are cancelled. This cannot be undone.',
    });
  });

  app.post('/console/webhooks/:id/delete', async (request, reply) => {
    const user = editor(request, reply);
    if (!user) return reply;
    const endpoint = await endpointOf(user, idOf(request));
    await writes.run(actorOf(user), (ctx) => deleteEndpoint(ctx, endpoint.id));
    return done(reply, user, '/console/webhooks', { notice: `Deleted ${endpoint.url}.` });
  });
}
