import type { FastifyInstance } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { findBusinessKind, listSandboxes } from '../sandbox/repository.ts';
import { createSandbox, deleteSandbox, resetSandbox, type SandboxSettings } from '../sandbox/service.ts';
import type { ConsoleKit, Form } from './kit.ts';
import { showBusiness, type SessionUser } from './session.ts';

/**
 * Sandboxes of the user's business (src/sandbox): everyone switches between the live business and
 * them; owners create (the test key shown once), reset and delete them.
 */
export function registerSandboxPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, act, idOf } = kit;
  const { db, writes, webhooks, sandboxesPerBusiness } = kit.deps;
  const settings = (user: SessionUser): SandboxSettings => ({
    writes,
    actor: { type: 'user', id: user.id, name: user.name },
    box: webhooks.box,
    maxSandboxes: sandboxesPerBusiness,
  });
  /** One of the user's sandboxes, else 404. */
  const sandboxOf = async (user: SessionUser, id: string) => {
    const found = (await listSandboxes(db, user.liveBusinessId)).find((s) => s.id === id);
    if (!found) throw new ApiError('NOT_FOUND', 'No such sandbox.');
    return found;
  };

  app.get('/console/sandboxes', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const live = await findBusinessKind(db, user.liveBusinessId);
    return page(reply, 'sandboxes.eta', user, {
      title: 'Sandboxes',
      section: 'sandboxes',
      live,
      sandboxes: await listSandboxes(db, user.liveBusinessId),
      limit: sandboxesPerBusiness,
    });
  });

  app.post('/console/switch', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const target = String((request.body as Form).businessId ?? '');
    return act(reply, user, '/console/sandboxes', async () => {
      if (target !== user.liveBusinessId) await sandboxOf(user, target);
      await showBusiness(db, user.token, target);
      return {
        notice: target === user.liveBusinessId ? 'Back to the live business.' : 'Now in the sandbox.',
        to: '/console/orders',
      };
    });
  });

  app.post('/console/sandboxes', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const name = String((request.body as Form).name ?? '').trim();
    return act(reply, user, '/console/sandboxes', async () => {
      if (name.length > 100) throw new ApiError('VALIDATION_ERROR', 'A sandbox name has at most 100 characters.');
      const made = await createSandbox(db, user.liveBusinessId, name || undefined, settings(user));
      return {
        notice: `Created the sandbox "${made.sandbox.name}" (${made.sandbox.id}), a copy of the live configuration.`,
        secret: {
          id: 'new-key-value',
          title: 'Its test key: copy it now',
          value: made.apiKey,
          note: `Send it with X-Business-Id: ${made.sandbox.id}.`,
        },
      };
    });
  });

  for (const [verb, heading, message] of [
    [
      'reset',
      'Reset',
      'Its orders, invoices and every change made in it go, and the live configuration is copied again. Its keys stay.',
    ],
    ['delete', 'Delete', 'The sandbox and everything in it go, its keys too. This cannot be undone.'],
  ] as const) {
    app.get(`/console/sandboxes/:id/${verb}`, async (request, reply) => {
      const user = signedIn(request, reply, ['owner']);
      if (!user) return reply;
      const sandbox = await sandboxOf(user, idOf(request));
      return page(reply, 'confirm.eta', user, {
        title: `${heading} sandbox`,
        section: 'sandboxes',
        heading: `${heading} the sandbox "${sandbox.name}"?`,
        action: `/console/sandboxes/${sandbox.id}/${verb}`,
        button: heading,
        cancel: '/console/sandboxes',
        message,
      });
    });
    app.post(`/console/sandboxes/:id/${verb}`, async (request, reply) => {
      const user = signedIn(request, reply, ['owner']);
      if (!user) return reply;
      const sandbox = await sandboxOf(user, idOf(request));
      return act(reply, user, '/console/sandboxes', async () => {
        // A session showing a deleted sandbox shows the live business again (deleteSandbox).
        if (verb === 'reset') await resetSandbox(db, sandbox.id, settings(user));
        else await deleteSandbox(db, sandbox.id, settings(user));
        return { notice: `${verb === 'reset' ? 'Reset' : 'Deleted'} the sandbox "${sandbox.name}".` };
      });
    });
  }
}
