import { unknownEventType } from '../events/schema.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import type { Buckets } from '../http/rate-limit.ts';
import { ApiError, notFound } from '../lib/errors.ts';
import { ID_PATTERN } from '../lib/ids.ts';
import type { Role } from '../users/table.ts';
import type { WebhookSettings } from '../webhooks/checks.ts';
import type { WriteRunner } from '../write/runner.ts';
import { flashCookie, FLASH_SECONDS, openFlash, sealFlash, type Flash } from './flash.ts';
import { FORMAT } from './format.ts';
import { csrfTokenOf, type SessionUser } from './session.ts';

export interface ConsoleDeps {
  db: Kysely<Database>;
  writes: WriteRunner;
  clock: () => number;
  /** Sign-in and password throttles, shared by instances when there is Redis. */
  buckets: Buckets;
  /** Session cookie over https only. */
  secureCookie: boolean;
  /** Webhook settings, and the worker's nudge after a test event or replay. */
  webhooks: WebhookSettings;
  kickWebhooks: () => void;
  /** SANDBOXES_PER_BUSINESS (src/sandbox). */
  sandboxesPerBusiness: number;
  /** SANDBOX_ACKNOWLEDGE_MINUTES, in ms (src/sandbox/findings.ts). */
  sandboxAcknowledgeMs: number;
}

/** The error handler answers 403. */
export class Forbidden extends Error {}
/** What an id can be (src/lib/ids.ts): nothing else reaches a query, a page or a redirect's Location. */
const CONSOLE_ID = new RegExp(ID_PATTERN);

export type Form = Record<string, string>;

export const GRACE_CHOICES = new Set([0, 3600, 86_400, 604_800]);

const EVENT_TYPE = /^(?:\*|[a-z_]{1,32}\.(?:\*|[a-z_]{1,32}))$/;

/** After sign-in: a console path of this host (never `//host`, a backslash, a scheme or a control character), else the start. */
export function localNext(raw: unknown): string {
  if (
    typeof raw !== 'string' ||
    raw.length > 2000 ||
    !raw.startsWith('/console') ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a return address with a control character is refused
    /[\\\u0000-\u001f\u007f]/.test(raw)
  )
    return '/console';
  try {
    const url = new URL(raw, 'http://console.invalid');
    if (
      url.origin !== 'http://console.invalid' ||
      !/^\/console(?:\/|$)/.test(url.pathname) ||
      url.pathname.startsWith('/console/sign-')
    )
      return '/console';
    return `${url.pathname}${url.search}`;
  } catch {
    return '/console';
  }
}

const problemText = (error: ApiError) =>
  (error.fieldErrors
    ? Object.entries(error.fieldErrors)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')
    : error.message
  ).slice(0, 500);

/** What every console page uses: dependencies, rendering, the role check and form helpers. */
export function createKit(deps: ConsoleDeps) {
  /** Post, redirect, get: the outcome goes in a one-time flash. */
  const done = (reply: FastifyReply, user: SessionUser, location: string, flash: Omit<Flash, 'at'>) => {
    reply.header(
      'set-cookie',
      flashCookie(sealFlash(user.token, { ...flash, at: location.split('?')[0] }), FLASH_SECONDS, deps.secureCookie),
    );
    return reply.redirect(location, 303);
  };
  return {
    deps,
    /** A page, with the flash meant for it (cleared as shown) and the formatters. */
    page: (reply: FastifyReply, template: string, user: SessionUser | null, data: Record<string, unknown>) => {
      let flash: Flash | null = null;
      if (user) {
        const found = openFlash(user.token, reply.request.headers.cookie);
        if (found && found.at === reply.request.url.split('?')[0].replace(/\/$/, '')) {
          flash = found;
          reply.header('set-cookie', flashCookie('', 0, deps.secureCookie));
        }
      }
      return reply
        .type('text/html; charset=utf-8')
        .view(template, { user, csrf: user ? csrfTokenOf(user.token) : '', flash, ...FORMAT, ...data });
    },
    done,
    /** Runs an action and redirects; a refusal (4xx other than 403 and 404) goes back to `back` as an error. */
    act: async (
      reply: FastifyReply,
      user: SessionUser,
      back: string,
      action: () => Promise<Omit<Flash, 'at'> & { to?: string }>,
    ) => {
      let outcome: Omit<Flash, 'at'> & { to?: string };
      try {
        outcome = await action();
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500 || error.status === 404 || error.status === 403)
          throw error;
        return done(reply, user, back, { error: problemText(error) });
      }
      const { to, ...flash } = outcome;
      return done(reply, user, to ?? back, flash);
    },

    /** The user when their role may open the page; else a redirect to sign in (null), or Forbidden. */
    signedIn: (
      request: FastifyRequest,
      reply: FastifyReply,
      roles: Role[] = ['owner', 'admin', 'viewer'],
    ): SessionUser | null => {
      const user = request.consoleUser;
      if (!user) {
        const next = request.method === 'GET' ? localNext(request.url) : '/console';
        void reply.redirect(
          next === '/console' ? '/console/sign-in' : `/console/sign-in?${new URLSearchParams({ next })}`,
          303,
        );
        return null;
      }
      if (!roles.includes(user.role)) throw new Forbidden();
      return user;
    },
    /** Their business, themselves as actor. */
    actorOf: (user: SessionUser) => ({
      businessId: user.businessId,
      actor: { type: 'user' as const, id: user.id, name: user.name },
    }),
    /** The user's own business, whose team and accounts these are, also while a sandbox is shown. */
    ownBusinessOf: (user: SessionUser) => ({
      businessId: user.liveBusinessId,
      actor: { type: 'user' as const, id: user.id, name: user.name },
    }),
    /** The `:id` of the URL; one no record can have (spaces, line breaks, other scripts) is a 404 here. */
    idOf: (request: FastifyRequest) => {
      const { id } = request.params as { id: string };
      if (!CONSOLE_ID.test(id)) throw notFound('Not found');
      return id;
    },
    /** A repeated parameter (an array) is dropped. */
    queryOf: (request: FastifyRequest): Record<string, string | undefined> =>
      Object.fromEntries(
        Object.entries((request.query ?? {}) as Record<string, unknown>).filter(([, v]) => typeof v === 'string'),
      ) as Record<string, string>,
    typesOf: (raw: unknown): string[] =>
      String(raw ?? '')
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    /** Field by field; anything else is rethrown to the error handler. */
    problem: (error: unknown): string => {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      return problemText(error);
    },
    checkTypes: (types: string[]) => {
      if (types.length > 100 || !types.every((t) => EVENT_TYPE.test(t)))
        throw new ApiError(
          'VALIDATION_ERROR',
          'Event types look like order.created, order.* or *, separated by commas.',
        );
      const unknown = unknownEventType(types);
      if (unknown) throw new ApiError('VALIDATION_ERROR', `${unknown}.`);
      return [...new Set(types)];
    },
  };
}

export type ConsoleKit = ReturnType<typeof createKit>;
