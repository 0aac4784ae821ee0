import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDatabase } from '../../src/db/connection.ts';
import { createUser } from '../../src/users/service.ts';
import { createWriteRunner, SYSTEM } from '../../src/write/runner.ts';
import {
  cliCreateBusiness,
  createPgDatabase,
  missing,
  PG_URL,
  REDIS_URL,
  sleep,
  startBundle,
  buildBundle,
} from './helpers.ts';

// Nothing secret in telemetry (issue 50): a server as `npm start` runs it (the bundle, with the
// preload), traced into an in-process OTLP/HTTP receiver, is sent API keys, a metrics token, console
// passwords and session cookies, and makes a webhook endpoint (its secret); none of them may appear
// in a span, an attribute, the resource or a log line. The spans must have arrived, joined from the
// request to its webhook delivery, so the test cannot pass by receiving nothing.
missing('postgres');
missing('redis');

const backends = ['sqlite', ...(PG_URL ? ['postgres'] : [])] as const;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number; message?: string };
}
interface Received {
  raw: string[];
  spans: OtlpSpan[];
}

const attribute = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
};

/** An OTLP/HTTP receiver of JSON traces, as a collector would be. */
async function startReceiver(): Promise<{ url: string; received: Received; close(): Promise<void> }> {
  const received: Received = { raw: [], spans: [] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      received.raw.push(`${req.url} ${JSON.stringify(req.headers)} ${text}`);
      if (req.url === '/v1/traces') {
        const body = JSON.parse(text) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
        for (const r of body.resourceSpans) for (const s of r.scopeSpans) received.spans.push(...s.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return listen(server, (url) => ({ url, received }));
}

/** A webhook receiver that answers 200 and keeps each delivery's headers and body. */
async function startHookReceiver(): Promise<{
  url: string;
  deliveries: Array<{ headers: IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}> {
  const deliveries: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body });
      res.writeHead(200).end('ok');
    });
  });
  return listen(server, (url) => ({ url: `${url}/hooks/supplyline`, deliveries }));
}

async function listen<T>(server: Server, make: (url: string) => T): Promise<T & { close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ...make(url),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request with exactly these headers (fetch would add Sec-Fetch-Mode and others). */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}${path}`,
      {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const cookieOf = (answer: Answer, name: string) =>
  [answer.headers['set-cookie'] ?? []]
    .flat()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(';')[0];

async function waitFor<T>(what: string, probe: () => T | undefined | false, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('telemetry (OpenTelemetry through the preload)', () => {
  let bundle: Awaited<ReturnType<typeof buildBundle>> | undefined;
  before(async () => {
    bundle = await buildBundle('telemetry');
  });
  after(() => bundle?.remove());

  for (const backend of backends) {
    it(`[${backend}] joins a request to its write, its event and its webhook delivery, with no secret in any span or log line`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'supplyline-telemetry-'));
      const database =
        backend === 'postgres'
          ? await createPgDatabase()
          : { url: `sqlite:${join(dir, 'telemetry.db')}`, drop: async () => {} };
      const receiver = await startReceiver();
      const hooks = await startHookReceiver();
      let server: Awaited<ReturnType<typeof startBundle>> | undefined;
      try {
        // The secrets: none may leave the process except in the answers that show them.
        const tenant = await cliCreateBusiness(database.url, 'Telemetry Supplier');
        const ownerPassword = `owner-${randomBytes(12).toString('hex')}`;
        const newPassword = `changed-${randomBytes(12).toString('hex')}`;
        const metricsToken = `metrics-${randomBytes(12).toString('hex')}`;
        const secretKey = randomBytes(32).toString('base64');
        const handle = createDatabase(database.url);
        await createWriteRunner(handle.db).run({ businessId: tenant.businessId, actor: SYSTEM }, (ctx) =>
          createUser(ctx, { email: 'owner@telemetry.example', name: 'Owner', role: 'owner', password: ownerPassword }),
        );
        await handle.close();

        server = await startBundle(bundle!.outdir, {
          DATABASE_URL: database.url,
          PORT: '0',
          HOST: '127.0.0.1',
          LOG_LEVEL: 'info',
          SECRET_KEY: secretKey,
          METRICS_TOKEN: metricsToken,
          WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'on',
          RATE_LIMIT_RPS: '1000',
          RATE_LIMIT_BURST: '1000',
          ...(REDIS_URL ? { REDIS_URL } : {}),
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'supplyline-telemetry-test',
          OTEL_TRACES_SAMPLER: 'parentbased_always_on',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        });
        const { base } = server;
        const api = { 'x-business-id': tenant.businessId, 'x-api-key': tenant.apiKey };
        const json = { ...api, 'content-type': 'application/json' };

        // The API key, also where a careless client puts it (Authorization), and a query string.
        assert.equal(
          (await send(base, 'GET', '/api/v1/items?limit=5', { ...api, authorization: `Bearer ${tenant.apiKey}` }))
            .status,
          200,
        );
        assert.equal((await send(base, 'GET', '/metrics', { authorization: `Bearer ${metricsToken}` })).status, 200);
        // A failure: its span has the error status, never the error's words.
        assert.equal((await send(base, 'GET', '/api/v1/orders/ord_01missingmissingmissing0000', api)).status, 404);
        // A webhook endpoint: its secret is in this answer only.
        const endpoint = await send(
          base,
          'POST',
          '/api/v1/webhook-endpoints',
          json,
          JSON.stringify({ url: hooks.url, eventTypes: ['item.*'] }),
        );
        assert.equal(endpoint.status, 201, endpoint.body);
        const webhookSecret = JSON.parse(endpoint.body).secret as string;
        assert.match(webhookSecret, /^whsec_/);

        // The console: a password, a session cookie, a team member's password shown once, a new password.
        const signIn = await send(
          base,
          'POST',
          '/console/sign-in',
          FORM,
          new URLSearchParams({ email: 'owner@telemetry.example', password: ownerPassword }).toString(),
        );
        assert.equal(signIn.status, 303, signIn.body);
        const session = cookieOf(signIn, 'sl_session') ?? [signIn.headers['set-cookie'] ?? []].flat()[0].split(';')[0];
        const sessionValue = session.split('=')[1];
        assert.ok(sessionValue.length >= 16, session);
        const csrf = /name="csrf" value="([^"]+)"/.exec(
          (await send(base, 'GET', '/console/team', { cookie: session })).body,
        )?.[1];
        assert.ok(csrf, 'the team page has a CSRF token');
        const invited = await send(
          base,
          'POST',
          '/console/team',
          { ...FORM, cookie: session },
          new URLSearchParams({ email: 'clerk@telemetry.example', name: 'Clerk', role: 'viewer', csrf }).toString(),
        );
        assert.equal(invited.status, 303, invited.body);
        const shown = await send(base, 'GET', String(invited.headers.location), {
          cookie: `${session}; ${cookieOf(invited, 'sl_flash')}`,
        });
        const invitedPassword = /<code id="new-password">([^<]+)<\/code>/.exec(shown.body)?.[1];
        assert.ok(invitedPassword, "the invited user's password is shown once");
        const changed = await send(
          base,
          'POST',
          '/console/account/password',
          { ...FORM, cookie: session },
          new URLSearchParams({ current: ownerPassword, password: newPassword, repeat: newPassword, csrf }).toString(),
        );
        assert.equal(changed.status, 303, changed.body);
        assert.doesNotMatch(String(changed.headers.location), /sign-in/);

        // A write whose event is delivered: the trace must run from this request to the delivery.
        const created = await send(
          base,
          'POST',
          '/api/v1/items',
          { ...json, 'idempotency-key': `telemetry-${backend}` },
          JSON.stringify({
            item: { name: 'Traced Tea' },
            variants: [{ variantName: '500g', currency: 'AUD', price: 12.5, cost: 4 }],
          }),
        );
        assert.equal(created.status, 201, created.body);
        const requestId = String(created.headers['x-request-id']);
        const delivery = await waitFor('the webhook delivery', () =>
          hooks.deliveries.find((d) => d.body.includes('"item.created"')),
        );

        // A request its caller did not sample: nothing of it is recorded, and its delivery says so too.
        const unsampled = randomBytes(16).toString('hex');
        const quiet = await send(
          base,
          'POST',
          '/api/v1/items',
          { ...json, traceparent: `00-${unsampled}-${randomBytes(8).toString('hex')}-00` },
          JSON.stringify({
            item: { name: 'Untraced Tea' },
            variants: [{ variantName: '1kg', currency: 'AUD', price: 22, cost: 7 }],
          }),
        );
        assert.equal(quiet.status, 201, quiet.body);
        const quietDelivery = await waitFor("the unsampled request's delivery", () =>
          hooks.deliveries.find((d) => d.body.includes('Untraced Tea')),
        );
        assert.match(String(quietDelivery.headers.traceparent), new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));

        const { spans } = receiver.received;
        const requestSpan = await waitFor('the request span', () =>
          spans.find((s) => attribute(s, 'supplyline.request_id') === requestId),
        );
        const attempt = await waitFor('the webhook attempt span', () =>
          spans.find((s) => s.name === 'webhook attempt' && s.traceId === requestSpan.traceId),
        );
        const trace = await waitFor('the write and append spans', () => {
          const inTrace = spans.filter((s) => s.traceId === requestSpan.traceId);
          const write = inTrace.find((s) => s.name === 'write');
          const append = inTrace.find((s) => s.name === 'append events');
          return write && append && { inTrace, write, append };
        });
        await server.stop();
        const output = server.output();
        server = undefined;

        assert.ok(!spans.some((s) => s.traceId === unsampled), 'no span of an unsampled request is exported');
        // The spans arrived, and join up.
        assert.equal(requestSpan.name, 'POST /api/v1/items');
        assert.equal(requestSpan.kind, 2, 'a server span');
        assert.equal(attribute(requestSpan, 'http.route'), '/api/v1/items');
        assert.equal(attribute(requestSpan, 'http.response.status_code'), 201);
        assert.equal(trace.append.parentSpanId, trace.write.spanId, 'the events are appended inside the write');
        assert.equal(
          attempt.parentSpanId,
          trace.append.spanId,
          'the attempt is a child of the append that made its event',
        );
        assert.equal(attempt.kind, 3, 'a client span');
        assert.equal(attribute(attempt, 'supplyline.webhook.outcome'), 'succeeded');
        assert.equal(attribute(attempt, 'http.response.status_code'), 200);
        assert.equal(
          delivery.headers.traceparent,
          `00-${attempt.traceId}-${attempt.spanId}-01`,
          'the receiver can join the trace',
        );
        // The webhook worker, woken by this request's commit, works outside its trace.
        assert.deepEqual(
          trace.inTrace.filter((s) => s.name === 'write').map((s) => attribute(s, 'supplyline.actor_type')),
          ['api_key'],
        );
        assert.ok(
          !trace.inTrace.some((s) => /webhook_deliveries/.test(String(attribute(s, 'db.query.text') ?? ''))),
          "no queueing statement in the request's trace",
        );
        // The write is the request's own child: the request has one span, not one more for its handler.
        assert.equal(trace.write.parentSpanId, requestSpan.spanId, trace.inTrace.map((s) => s.name).join(', '));
        if (backend === 'postgres') {
          const statements = trace.inTrace.filter(
            (s) =>
              typeof attribute(s, 'db.query.text') === 'string' || typeof attribute(s, 'db.statement') === 'string',
          );
          assert.ok(
            statements.length > 0,
            `PostgreSQL statements in the request's trace: ${trace.inTrace.map((s) => s.name).join(', ')}`,
          );
        }
        if (REDIS_URL) {
          assert.ok(
            spans.some((s) => /evalsha|eval/i.test(s.name)),
            `a Redis span (the rate limit): ${[...new Set(spans.map((s) => s.name))].join(', ')}`,
          );
        }
        for (const span of spans) {
          const path = attribute(span, 'url.path');
          if (path !== undefined) assert.doesNotMatch(String(path), /\?/, 'no query string is recorded');
        }
        assert.ok(!spans.some((s) => attribute(s, 'url.path') === '/metrics'), 'probes and scrapes make no spans');
        assert.ok(
          spans.some((s) => s.status?.code === 2),
          'the 404 marked its spans as failed',
        );
        assert.deepEqual(
          spans.filter((s) => s.status?.message).map((s) => `${s.name}: ${s.status!.message}`),
          [],
          'no error text in a span',
        );
        assert.ok(!receiver.received.raw.join('\n').includes('"exception"'), 'no exception events');

        // Log lines carry the trace.
        const completed = output
          .split('\n')
          .filter((l) => l.includes('"request completed"') && l.includes(`"${requestId}"`));
        assert.equal(completed.length, 1, output);
        assert.equal(JSON.parse(completed[0]).trace_id, requestSpan.traceId);

        // And no secret anywhere in what the collector received, or in the log.
        const telemetry = receiver.received.raw.join('\n');
        assert.ok(
          telemetry.includes('"service.name"') && telemetry.includes('supplyline-telemetry-test'),
          'the resource was received',
        );
        const secrets = {
          apiKey: tenant.apiKey,
          metricsToken,
          webhookSecret,
          webhookSecretKey: webhookSecret.slice('whsec_'.length),
          session: sessionValue,
          ownerPassword,
          newPassword,
          invitedPassword,
          secretKey,
          csrf,
        };
        for (const [name, value] of Object.entries(secrets)) {
          assert.ok(!telemetry.includes(value), `${name} was sent to the collector`);
          assert.ok(!output.includes(value), `${name} is in the log`);
        }
      } catch (error) {
        console.error(server?.output());
        throw error;
      } finally {
        await server?.stop();
        await Promise.all([receiver.close(), hooks.close()]);
        await database.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
