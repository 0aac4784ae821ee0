import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.ts';
import { ApiError } from '../lib/errors.ts';
import type { Role } from '../users/table.ts';
import type { WebhookSettings } from '../webhooks/service.ts';
import type { WriteRunner } from '../write/runner.ts';
import { csrfTokenOf, type SessionUser } from './session.ts';

export interface ConsoleDeps {
  db: Kysely<Database>;
  writes: WriteRunner;
  clock: () => number;
  /** CONSOLE_COOKIE_SECURE: the session cookie is sent over https only. */
  secureCookie: boolean;
  /** The webhook services' settings, and the worker's nudge after a test event or replay. */
  webhooks: WebhookSettings;
  kickWebhooks: () => void;
}

/** A page asked for by a role that may not open it: the error handler answers 403. */
export class Forbidden extends Error {}

export type Form = Record<string, string>;

/** The grace periods offered when rotating a key or a signing secret: now, 1 h, 24 h, 7 days. */
export const GRACE_CHOICES = new Set([0, 3600, 86_400, 604_800]);

const EVENT_TYPE = /^(?:\*|[a-z_]{1,32}\.(?:\*|[a-z_]{1,32}))$/;

/** What every page of the console uses: the dependencies, rendering, the role check and form helpers. */
export function createKit(deps: ConsoleDeps) {
  return {
    deps,
    page: (reply: FastifyReply, template: string, user: SessionUser | null, data: Record<string, unknown>) =>
      reply.type('text/html; charset=utf-8').view(template, { user, csrf: user ? csrfTokenOf(user.token) : '', ...data }),

    /** The signed-in user when their role may open the page; else a redirect to sign in (null), or Forbidden. */
    signedIn: (request: FastifyRequest, reply: FastifyReply, roles: Role[] = ['owner', 'admin', 'viewer']): SessionUser | null => {
      const user = request.consoleUser;
      if (!user) {
        void reply.redirect('/console/sign-in', 303);
        return null;
      }
      if (!roles.includes(user.role)) throw new Forbidden();
      return user;
    },
    /** The write runner's scope for an action of this user: their business, themselves as actor. */
    actorOf: (user: SessionUser) => ({ businessId: user.businessId, actor: { type: 'user' as const, id: user.id, name: user.name } }),
    idOf: (request: FastifyRequest) => (request.params as { id: string }).id,
    /** The query's string values; a repeated parameter (an array) is dropped, not passed on to a page. */
    queryOf: (request: FastifyRequest): Record<string, string | undefined> =>
      Object.fromEntries(Object.entries((request.query ?? {}) as Record<string, unknown>).filter(([, v]) => typeof v === 'string')) as Record<string, string>,
    typesOf: (raw: unknown): string[] => String(raw ?? '').split(',').map((t) => t.trim()).filter(Boolean),
    /** A refusal's text for the page (field by field); anything else is rethrown to the error handler. */
    problem: (error: unknown): string => {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      return error.fieldErrors ? Object.entries(error.fieldErrors).map(([k, v]) => `${k}: ${v}`).join('; ') : error.message;
    },
    checkTypes: (types: string[]) => {
      if (types.length > 100 || !types.every((t) => EVENT_TYPE.test(t))) throw new ApiError('VALIDATION_ERROR', 'Event types look like order.created, order.* or *, separated by commas.');
      return [...new Set(types)];
    },
  };
}

export type ConsoleKit = ReturnType<typeof createKit>;
