import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { listUsers } from '../users/repository.ts';
import { createUser, updateUser } from '../users/service.ts';
import type { Role } from '../users/table.ts';
import type { ConsoleKit, Form } from './kit.ts';
import type { SessionUser } from './session.ts';

/** The team (owners): add users with a role, change roles, disable. */
export function registerTeamPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, actorOf } = kit;
  const { db, writes } = kit.deps;
  const teamPage = async (reply: FastifyReply, user: SessionUser, extra: Record<string, unknown> = {}) =>
    page(reply, 'team.eta', user, { title: 'Team', section: 'team', users: await listUsers(db, user.businessId), ...extra });

  app.get('/console/team', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    if (user.role !== 'owner') return page(reply, 'message.eta', user, { title: 'Console', heading: `Signed in as ${user.name}`, message: 'Your role can read; the pages you may open are in the menu.' });
    return teamPage(reply, user);
  });

  app.post('/console/team', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    try {
      const created = await writes.run(actorOf(user), (ctx) => createUser(ctx, { email: String(form.email ?? ''), name: String(form.name ?? ''), role: form.role as Role }));
      return teamPage(reply.code(201), user, { created: { email: created.user.email, password: created.password } });
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) {
        const detail = error.fieldErrors ? Object.values(error.fieldErrors).join('; ') : error.message;
        return teamPage(reply.code(error.status), user, { error: detail });
      }
      throw error;
    }
  });

  app.post('/console/team/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    const id = (request.params as { id: string }).id;
    if (id === user.id) throw new ApiError('VALIDATION_ERROR', 'You cannot change your own role or disable yourself here.');
    const change = form.action === 'disable' ? { status: 'disabled' as const } : { role: form.role as Role };
    await writes.run(actorOf(user), (ctx) => updateUser(ctx, id, change));
    return reply.redirect('/console/team', 303);
  });
}
