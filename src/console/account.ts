import type { FastifyInstance } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { verifyPassword } from '../users/password.ts';
import { findUser } from '../users/repository.ts';
import { setPassword } from '../users/service.ts';
import type { ConsoleKit, Form } from './kit.ts';
import { sessionIdOf } from './session.ts';

/** Your account (every role): who you are, and your password, whose change ends your other sessions. */
export function registerAccountPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn, ownBusinessOf, act } = kit;
  const { db, writes } = kit.deps;
  // Throttled as at sign-in, across instances when they share Redis.
  const tries = kit.deps.buckets({ ratePerSecond: 5 / 60, burst: 5 }, 'password-change');

  app.get('/console/account', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    return page(reply, 'account.eta', user, { title: 'Your account', section: 'account' });
  });

  app.post('/console/account/password', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    const form = request.body as Form;
    return act(reply, user, '/console/account', async () => {
      if (!(await tries.take(user.id)).allowed)
        throw new ApiError('VALIDATION_ERROR', 'Too many attempts. Wait a minute, then try again.');
      const row = await findUser(db, user.liveBusinessId, user.id);
      if (!row || !(await verifyPassword(String(form.current ?? '').slice(0, 200), row.password_hash))) {
        throw new ApiError('VALIDATION_ERROR', 'Your current password is not that one.');
      }
      const password = String(form.password ?? '');
      if (password !== String(form.repeat ?? ''))
        throw new ApiError('VALIDATION_ERROR', 'The new password and its repetition differ.');
      await writes.run(ownBusinessOf(user), (ctx) => setPassword(ctx, user.id, password, sessionIdOf(user.token)));
      return { notice: 'Your password is changed. Your other sessions have ended; this one goes on.' };
    });
  });
}
