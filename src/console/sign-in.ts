import type { FastifyInstance } from 'fastify';
import { DUMMY_HASH, verifyPassword } from '../users/password.ts';
import { findUserByEmail } from '../users/repository.ts';
import { type ConsoleKit, type Form, localNext } from './kit.ts';
import { ABSOLUTE_MS, createSession, endAllSessions, endSession, SESSION_COOKIE } from './session.ts';

/** Signing in and out: the session cookie, and sign-in attempts throttled per account and per address. */
export function registerSignInPages(app: FastifyInstance, kit: ConsoleKit): void {
  const { page, signedIn } = kit;
  const { db, clock } = kit.deps;
  // Sign-in attempts are throttled per account and per address, across instances when they share Redis.
  // An account's guesses from one address, and from all of them (decision 0032).
  const perAccountAddress = kit.deps.buckets({ ratePerSecond: 5 / 60, burst: 5 }, 'sign-in-account-address');
  const perAccount = kit.deps.buckets({ ratePerSecond: 30 / 60, burst: 30 }, 'sign-in-account');
  const perAddress = kit.deps.buckets({ ratePerSecond: 20 / 60, burst: 20 }, 'sign-in-address');

  const cookie = (value: string, maxAgeSeconds: number) =>
    `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${kit.deps.secureCookie ? '; Secure' : ''}`;

  // The sign-in page says so (no session is left to carry a flash).
  const SIGNED_OUT: Record<string, string> = {
    out: 'You are signed out.',
    everywhere: 'You are signed out on every device and browser.',
  };

  app.get('/console/sign-in', async (request, reply) => {
    const q = kit.queryOf(request);
    const next = localNext(q.next);
    if (request.consoleUser) return reply.redirect(next, 303);
    const notice = q.signed && Object.hasOwn(SIGNED_OUT, q.signed) ? SIGNED_OUT[q.signed] : undefined;
    return page(reply, 'sign-in.eta', null, { title: 'Sign in', next, notice });
  });

  app.post('/console/sign-in', async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const email = String(form.email ?? '')
      .trim()
      .toLowerCase()
      .slice(0, 320);
    // Each budget is charged only when the one before it let the attempt through: a stranger's
    // guesses spend the account's budget at their own address, and of the account's whole budget
    // no more than one address's share, so they cannot lock its owner out elsewhere.
    let refused: { allowed: boolean; retryAfterSeconds: number } | undefined;
    for (const [bucket, key] of [
      [perAddress, request.ip],
      [perAccountAddress, `${email} ${request.ip}`],
      [perAccount, email],
    ] as const) {
      const taken = await bucket.take(key);
      if (!taken.allowed) {
        refused = taken;
        break;
      }
    }
    if (refused) {
      reply.header('retry-after', String(refused.retryAfterSeconds));
      return page(reply.code(429), 'sign-in.eta', null, {
        title: 'Sign in',
        email,
        next: localNext(form.next),
        error: 'Too many attempts. Wait a minute, then try again.',
      });
    }
    const user = email ? await findUserByEmail(db, email) : undefined;
    // A missing user costs a hash too, so timing does not tell which emails exist.
    const ok = await verifyPassword(String(form.password ?? '').slice(0, 200), user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok || user.status !== 'active') {
      return page(reply.code(401), 'sign-in.eta', null, {
        title: 'Sign in',
        email,
        next: localNext(form.next),
        error: 'Wrong email or password.',
      });
    }
    const token = await createSession(db, user, clock());
    reply.header('set-cookie', cookie(token, ABSOLUTE_MS / 1000));
    return reply.redirect(localNext(form.next), 303);
  });

  app.post('/console/sign-out', async (request, reply) => {
    if (request.consoleUser) await endSession(db, request.consoleUser.token, clock());
    reply.header('set-cookie', cookie('', 0));
    return reply.redirect('/console/sign-in?signed=out', 303);
  });

  app.get('/console/sign-out-everywhere', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    return page(reply, 'confirm.eta', user, {
      title: 'Sign out everywhere',
      heading: 'Sign out everywhere?',
      action: '/console/sign-out-everywhere',
      button: 'Sign out everywhere',
      cancel: '/console',
      message: 'Every session of yours ends: this browser, and any other device or browser where you are signed in.',
    });
  });

  app.post('/console/sign-out-everywhere', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    await endAllSessions(db, user.id, clock());
    reply.header('set-cookie', cookie('', 0));
    return reply.redirect('/console/sign-in?signed=everywhere', 303);
  });
}
