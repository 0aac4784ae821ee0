import type { FastifyInstance } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { generatePassword } from '../users/password.ts';
import { findUser, listUsers } from '../users/repository.ts';
import { createUser, setPassword, updateUser } from '../users/service.ts';
import type { Role } from '../users/table.ts';
import type { ConsoleKit, Form } from './kit.ts';
import type { SessionUser } from './session.ts';

/** The team (owners): add users with a role, change roles, reset a password, disable. */
export function registerTeamPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, ownBusinessOf, act, done, idOf } = kit;
  const { db, writes } = kit.deps;
  /** Another user: yourself is changed on your account page. */
  const otherUser = async (user: SessionUser, id: string) => {
    const row = await findUser(db, user.liveBusinessId, id);
    if (!row) throw new ApiError('NOT_FOUND', 'No such user.');
    if (row.id === user.id)
      throw new ApiError(
        'VALIDATION_ERROR',
        'You cannot change your own role, password or status here: use Your account.',
      );
    return row;
  };

  app.get('/console/team', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    if (user.role !== 'owner')
      return page(reply, 'message.eta', user, {
        title: 'Console',
        heading: `Signed in as ${user.name}`,
        message: 'Your role can read; the pages you may open are in the menu.',
      });
    return page(reply, 'team.eta', user, {
      title: 'Team',
      section: 'team',
      users: await listUsers(db, user.liveBusinessId),
    });
  });

  app.post('/console/team', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    return act(reply, user, '/console/team', async () => {
      const created = await writes.run(ownBusinessOf(user), (ctx) =>
        createUser(ctx, { email: String(form.email ?? ''), name: String(form.name ?? ''), role: form.role as Role }),
      );
      return {
        notice: `Added ${created.user.email} as ${created.user.role}.`,
        secret: {
          id: 'new-password',
          title: `Password for ${created.user.email}`,
          value: created.password,
          note: 'Give it to them in person or through your password manager; they can change it under Your account.',
        },
      };
    });
  });

  app.post('/console/team/:id', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const form = request.body as Form;
    const id = idOf(request);
    return act(reply, user, '/console/team', async () => {
      const row = await otherUser(user, id);
      if (form.role === undefined || form.role === '') throw new ApiError('VALIDATION_ERROR', 'Choose a role.');
      const changed = await writes.run(ownBusinessOf(user), (ctx) =>
        updateUser(ctx, row.id, { role: form.role as Role }),
      );
      return { notice: `${changed.name} is now ${changed.role}.` };
    });
  });

  app.get('/console/team/:id/disable', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const row = await otherUser(user, idOf(request));
    return page(reply, 'confirm.eta', user, {
      title: 'Disable user',
      section: 'team',
      heading: `Disable ${row.name}?`,
      action: `/console/team/${row.id}/disable`,
      button: 'Disable',
      cancel: '/console/team',
      message: `${row.email} is signed out everywhere and can no longer sign in. What they did stays in the history.`,
    });
  });

  app.post('/console/team/:id/disable', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const id = idOf(request);
    return act(reply, user, '/console/team', async () => {
      const row = await otherUser(user, id);
      await writes.run(ownBusinessOf(user), (ctx) => updateUser(ctx, row.id, { status: 'disabled' }));
      return { notice: `Disabled ${row.name}: their sessions have ended.` };
    });
  });

  app.get('/console/team/:id/reset-password', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const row = await otherUser(user, idOf(request));
    return page(reply, 'confirm.eta', user, {
      title: 'Reset password',
      section: 'team',
      heading: `Reset the password of ${row.name}?`,
      action: `/console/team/${row.id}/reset-password`,
      button: 'Reset password',
      cancel: '/console/team',
      message: `A new password is made and shown to you once; ${row.email}'s current password stops working and their sessions end.`,
    });
  });

  app.post('/console/team/:id/reset-password', async (request, reply) => {
    const user = signedIn(request, reply, ['owner']);
    if (!user) return reply;
    const id = idOf(request);
    const row = await findUser(db, user.liveBusinessId, id);
    if (!row) throw new ApiError('NOT_FOUND', 'No such user.');
    if (row.id === user.id) return done(reply, user, '/console/account', { error: 'Change your own password here.' });
    const password = generatePassword();
    await writes.run(ownBusinessOf(user), (ctx) => setPassword(ctx, row.id, password));
    return done(reply, user, '/console/team', {
      notice: `Reset the password of ${row.name}; their sessions have ended.`,
      secret: {
        id: 'new-password',
        title: `New password for ${row.email}`,
        value: password,
        note: 'Give it to them in person or through your password manager.',
      },
    });
  });
}
