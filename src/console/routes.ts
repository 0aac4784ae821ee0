import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../lib/errors.ts';
import { registerKeyPages } from './keys.ts';
import { registerSignInPages } from './sign-in.ts';
import { createKit, Forbidden, type ConsoleDeps, type Form } from './kit.ts';
import { registerAccountPages } from './account.ts';
import { registerOrderPages } from './orders.ts';
import { registerFulfilmentPages } from './fulfilment.ts';
import { checkCsrf, cookieValue, csrfTokenOf, readSession, SESSION_COOKIE, type SessionUser } from './session.ts';
import { registerTeamPages } from './team.ts';
import { registerAuditPages } from './audit.ts';
import { registerImportPages } from './imports.ts';
import { registerSandboxPages } from './sandboxes.ts';
import { registerSimulationPages } from './simulations.ts';
import { registerWebhookPages } from './webhooks.ts';
import { requestTraceFields } from '../telemetry/spans.ts';

export type { ConsoleDeps } from './kit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    consoleUser: SessionUser | null;
  }
}

/** Beside this module (tsx), or in src/ beside dist/ (the bundle). */
function consoleDir(name: string): string {
  const here = join(import.meta.dirname, name);
  return existsSync(here) ? here : join(import.meta.dirname, '..', 'src', 'console', name);
}

const ASSETS: Record<string, { type: string; body: () => Buffer }> = (() => {
  const require = createRequire(import.meta.url);
  const file = (path: string) => {
    let cached: Buffer | undefined;
    return () => (cached ??= readFileSync(path));
  };
  return {
    'htmx.min.js': { type: 'text/javascript; charset=utf-8', body: file(require.resolve('htmx.org/dist/htmx.min.js')) },
    'console.js': { type: 'text/javascript; charset=utf-8', body: file(join(consoleDir('assets'), 'console.js')) },
    'console.css': { type: 'text/css; charset=utf-8', body: file(join(consoleDir('assets'), 'console.css')) },
    'favicon.svg': { type: 'image/svg+xml', body: file(join(consoleDir('assets'), 'favicon.svg')) },
  };
})();

/** No inline script or style, no framing, forms only to the console itself. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const FORM_LIMIT = 16 * 1024;

/** Sec-Fetch-Site says another site, or Origin is not this host. */
function isCrossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

/**
 * The supplier console at /console: server-rendered pages, forms that work without script, htmx
 * where present. Its own scope with session-cookie authentication (a session never opens the API,
 * a key never opens the console); handlers call the API's services through the write runner.
 */
export async function consoleRoutes(app: FastifyInstance, deps: ConsoleDeps) {
  const { db, clock } = deps;
  // Pages, not API operations: none is in /openapi.json.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(view, {
    engine: { eta: new Eta({ autoEscape: true }) },
    templates: consoleDir('views'),
    layout: 'layout.eta',
    production: true,
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_LIMIT },
    (_request, body, done) => {
      const form: Form = {};
      for (const [key, value] of new URLSearchParams(String(body))) {
        // PostgreSQL text cannot hold NUL: refused, as the API's parser does.
        if (key.includes('\u0000') || value.includes('\u0000'))
          return done(new ApiError('VALIDATION_ERROR', 'A form field cannot hold a NUL character.'));
        form[key] = value;
      }
      done(null, form);
    },
  );

  app.decorateRequest('consoleUser', null);
  app.addHook('onRequest', async (request, reply) => {
    reply
      .header('content-security-policy', CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('cache-control', 'no-store');
    if (/%00/.test(request.url)) throw new ApiError('VALIDATION_ERROR', 'The address cannot hold a NUL character.');
    request.consoleUser = await readSession(db, cookieValue(request.headers.cookie, SESSION_COOKIE), clock());
  });
  // State-changing forms carry the CSRF token, and no form is taken from another site, which also
  // covers sign-in: a page elsewhere cannot sign a visitor into an account of its choosing.
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const user = request.consoleUser;
    const form = (request.body ?? {}) as Form;
    const signingIn = request.url.split('?')[0] === '/console/sign-in';
    if (isCrossSite(request) || (!signingIn && (!user || !checkCsrf(user.token, form.csrf)))) {
      return reply
        .code(403)
        .type('text/html; charset=utf-8')
        .view('message.eta', {
          title: 'Refused',
          user,
          csrf: user ? csrfTokenOf(user.token) : '',
          heading: 'Refused',
          message: 'This form has expired or did not come from the console. Reload the page and try again.',
        });
    }
  });
  app.setErrorHandler(async (error, request, reply) => {
    const user = request.consoleUser;
    const status =
      error instanceof Forbidden
        ? 403
        : error instanceof ApiError
          ? error.status
          : ((error as { statusCode?: number }).statusCode ?? 500);
    if (status >= 500) request.log.error({ err: error, ...requestTraceFields(request) }, 'console error');
    // A redirect that failed may have left its Location: this answer is a page.
    reply.removeHeader('location');
    const message =
      error instanceof Forbidden
        ? 'Your role does not allow this page.'
        : status < 500
          ? (error as Error).message
          : 'Something went wrong; it has been logged.';
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .view('message.eta', {
        title: 'Error',
        user,
        csrf: user ? csrfTokenOf(user.token) : '',
        heading: status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'Something is wrong',
        message,
      });
  });
  const kit = createKit(deps);
  const { page, signedIn } = kit;
  app.get('/console/assets/:name', async (request, reply) => {
    // Own names only: `valueOf` or `constructor` would find Object.prototype's.
    const name = (request.params as { name: string }).name;
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!asset) return reply.code(404).type('text/plain').send('Not found');
    return reply.type(asset.type).header('cache-control', 'public, max-age=3600').send(asset.body());
  });

  app.get('/console', async (request, reply) => {
    const user = signedIn(request, reply);
    if (!user) return reply;
    return reply.redirect(
      user.role === 'owner' ? '/console/keys' : user.role === 'admin' ? '/console/webhooks' : '/console/orders',
      303,
    );
  });

  registerSignInPages(app, kit);
  registerKeyPages(app, kit);
  registerWebhookPages(app, kit);
  registerOrderPages(app, kit);
  registerFulfilmentPages(app, kit);
  registerTeamPages(app, kit);
  registerAuditPages(app, kit);
  registerImportPages(app, kit);
  registerSandboxPages(app, kit);
  registerSimulationPages(app, kit);
  registerAccountPages(app, kit);

  // Any other console address: a page, not the API's JSON (a POST is refused without its token first).
  const notFound = async (request: FastifyRequest, reply: FastifyReply) => {
    const user = request.consoleUser;
    return page(reply.code(404), 'message.eta', user, {
      title: 'Not found',
      heading: 'No such page',
      message: `There is no console page at ${request.url.split('?')[0].slice(0, 200)}.`,
    });
  };
  app.get('/console/*', notFound);
  app.post('/console/*', notFound);
}
