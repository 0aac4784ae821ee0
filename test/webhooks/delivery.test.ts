import assert from 'node:assert/strict';
import { MAX_ENDPOINTS } from '../../src/webhooks/service.ts';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { loadConfig, type WebhookConfig } from '../../src/config.ts';
import { purgeEventsBefore } from '../../src/log/events.ts';
import { analyzeGrownTables } from '../../src/db/dialect.ts';
import { describeEachBackend, type Tenant, type TestContext } from '../helpers/context.ts';
import { createFixture, createOrder, patchOrder } from '../helpers/orders.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { securityCases } from '../helpers/security.ts';

const webhooks = (overrides: Partial<WebhookConfig>): { config: { webhooks: WebhookConfig } } => ({
  config: {
    webhooks: {
      ...loadConfig({}).webhooks,
      allowPrivateNetworks: true,
      retrySchedule: [0, 1, 1, 1],
      timeoutMs: 1500,
      ...overrides,
    },
  },
});

async function createEndpoint(ctx: TestContext, t: Tenant, body: Record<string, unknown>) {
  const res = await ctx.request('POST', '/api/v1/webhook-endpoints', { as: t, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function createItem(ctx: TestContext, t: Tenant, name: string) {
  const res = await ctx.request('POST', '/api/v1/items', {
    as: t,
    body: { item: { name }, variants: [{ variantName: 'One', currency: 'AUD', price: 1 }] },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function feed(ctx: TestContext, t: Tenant, after = 0) {
  const res = await ctx.request('GET', `/api/v1/events?after=${after}&limit=1000`, { as: t });
  assert.equal(res.status, 200);
  return res.body.items as any[];
}

async function deliveries(ctx: TestContext, t: Tenant, endpointId: string, query = '') {
  const res = await ctx.request('GET', `/api/v1/webhook-endpoints/${endpointId}/deliveries?limit=100${query}`, {
    as: t,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.items as any[];
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Per resource, the sequences a receiver got, in arrival order. */
function sequencesByResource(received: { event: any }[]) {
  const map = new Map<string, number[]>();
  for (const { event } of received) {
    const key = `${event.resourceType}:${event.resourceId}`;
    map.set(key, [...(map.get(key) ?? []), event.sequence]);
  }
  return map;
}

describeEachBackend(
  'webhook endpoints',
  (ctx) => {
    it('creates an endpoint and shows its secret once, never again', async () => {
      const t = await ctx().createTenant();
      const created = await createEndpoint(ctx(), t, {
        url: 'https://hooks.example.com/in',
        eventTypes: ['order.*'],
        description: 'ERP',
      });
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
      assert.equal(created.status, 'enabled');
      assert.deepEqual(created.eventTypes, ['order.*']);
      const got = await ctx().request('GET', `/api/v1/webhook-endpoints/${created.id}`, { as: t });
      assert.equal(got.status, 200);
      assert.equal(got.body.secret, undefined);
      assert.ok(!JSON.stringify(got.body).includes(created.secret.slice(6)));
      const list = await ctx().request('GET', '/api/v1/webhook-endpoints', { as: t });
      assert.equal(list.body.total, 1);
      assert.ok(!JSON.stringify(list.body).includes(created.secret.slice(6)));
      // Stored encrypted: the secret's text is nowhere in the endpoint's row.
      const row = await ctx()
        .db.selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', created.id)
        .executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(row).includes(created.secret.slice(6)));
    });

    it(`refuses a business's endpoint past ${MAX_ENDPOINTS} (409), deleted ones aside`, async () => {
      const t = await ctx().createTenant();
      const made = [];
      for (let i = 0; i < MAX_ENDPOINTS; i++)
        made.push(await createEndpoint(ctx(), t, { url: `https://hooks.example.com/${i}` }));
      const extra = { url: 'https://hooks.example.com/extra' };
      const refused = await ctx().request('POST', '/api/v1/webhook-endpoints', { as: t, body: extra });
      assert.equal(refused.status, 409);
      assert.equal(
        refused.body.message,
        `A business has at most ${MAX_ENDPOINTS} webhook endpoints: delete one it no longer needs first`,
      );
      // Another business is not held back, and a deleted endpoint frees its place.
      const other = await ctx().createTenant();
      assert.equal((await ctx().request('POST', '/api/v1/webhook-endpoints', { as: other, body: extra })).status, 201);
      await ctx().request('DELETE', `/api/v1/webhook-endpoints/${made[0].id}`, { as: t });
      assert.equal((await ctx().request('POST', '/api/v1/webhook-endpoints', { as: t, body: extra })).status, 201);
    });

    it('starts a disabled endpoint from the next event however it comes back, through paused too', async () => {
      const t = await ctx().createTenant();
      const made = await createEndpoint(ctx(), t, { url: 'https://hooks.example.com/d' });
      const patch = (status: string) =>
        ctx().request('PATCH', `/api/v1/webhook-endpoints/${made.id}`, { as: t, body: { status } });
      await patch('disabled');
      await createItem(ctx(), t, 'Made while disabled');
      const last = (await feed(ctx(), t)).at(-1).sequence;
      const paused = await patch('paused');
      assert.equal(paused.body.lastSequence, last, 'what happened while it was disabled is not sent once it is paused');
      const enabled = await patch('enabled');
      assert.equal(enabled.body.lastSequence, last);
    });

    it('answers a retried create with the same secret, stored encrypted under the Idempotency-Key', async () => {
      const t = await ctx().createTenant();
      const headers = { 'idempotency-key': 'create-hook-1' };
      const first = await ctx().request('POST', '/api/v1/webhook-endpoints', {
        as: t,
        headers,
        body: { url: 'https://hooks.example.com/a' },
      });
      const again = await ctx().request('POST', '/api/v1/webhook-endpoints', {
        as: t,
        headers,
        body: { url: 'https://hooks.example.com/a' },
      });
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.body.secret, first.body.secret);
      assert.equal(again.body.id, first.body.id);
      const record = await ctx()
        .db.selectFrom('idempotency_keys')
        .select('response_body')
        .where('business_id', '=', t.businessId)
        .where('key', '=', 'create-hook-1')
        .executeTakeFirstOrThrow();
      assert.ok(!record.response_body.includes(first.body.secret.slice(6)));
    });

    it('refuses what can never be delivered, field by field', async () => {
      const t = await ctx().createTenant();
      const cases: [unknown, string][] = [
        [{ url: 'ftp://hooks.example.com/' }, 'url'],
        [{ url: 'not a url' }, 'url'],
        [{ url: 'https://user:pw@hooks.example.com/' }, 'url'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['Order created'] }, 'eventTypes/0'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['order.*', 'order.*'] }, 'eventTypes'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['*', 'orders.*'] }, 'eventTypes'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['order.*', 'item.acknowledged'] }, 'eventTypes'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['order.create'] }, 'eventTypes'],
        [{ url: 'https://hooks.example.com/', status: 'disabled' }, 'status'],
        [{ url: 'https://hooks.example.com/', secret: 'whsec_x' }, 'secret'],
      ];
      for (const [body, field] of cases) {
        const res = await ctx().request('POST', '/api/v1/webhook-endpoints', { as: t, body });
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
        assert.ok(
          Object.keys(res.body.fieldErrors ?? {}).some((k) => k.startsWith(field.split('/')[0])),
          `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`,
        );
      }
    });

    it("records endpoint changes as events, with the user's key as actor and no secret in them", async () => {
      const t = await ctx().createTenant();
      const [start] = (await feed(ctx(), t)).slice(-1);
      const created = await createEndpoint(ctx(), t, { url: 'https://hooks.example.com/e' });
      const patched = await ctx().request('PATCH', `/api/v1/webhook-endpoints/${created.id}`, {
        as: t,
        body: { description: 'mirror', eventTypes: ['invoice.*'] },
      });
      assert.equal(patched.status, 200);
      assert.equal(patched.body.description, 'mirror');
      // The same again changes nothing: no write, no event, the same updatedAt.
      const same = await ctx().request('PATCH', `/api/v1/webhook-endpoints/${created.id}`, {
        as: t,
        body: { description: 'mirror', eventTypes: ['invoice.*'], status: 'enabled' },
      });
      assert.equal(same.status, 200);
      assert.equal(same.body.updatedAt, patched.body.updatedAt);
      assert.equal(same.body.description, 'mirror');
      await ctx().request('PATCH', `/api/v1/webhook-endpoints/${created.id}`, { as: t, body: { status: 'paused' } });
      await ctx().request('PATCH', `/api/v1/webhook-endpoints/${created.id}`, { as: t, body: { status: 'disabled' } });
      const rotated = await ctx().request('POST', `/api/v1/webhook-endpoints/${created.id}/rotate-secret`, {
        as: t,
        body: { gracePeriodSeconds: 60 },
      });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.secret, created.secret);
      assert.ok(rotated.body.previousSecretExpiresAt);
      const deleted = await ctx().request('DELETE', `/api/v1/webhook-endpoints/${created.id}`, { as: t });
      assert.equal(deleted.status, 204);
      assert.equal((await ctx().request('GET', `/api/v1/webhook-endpoints/${created.id}`, { as: t })).status, 404);
      const events = (await feed(ctx(), t, start?.sequence ?? 0)).filter((e) => e.resourceType === 'webhook_endpoint');
      assert.deepEqual(
        events.map((e) => e.type),
        [
          'webhook_endpoint.created',
          'webhook_endpoint.updated',
          'webhook_endpoint.paused',
          'webhook_endpoint.disabled',
          'webhook_endpoint.updated',
          'webhook_endpoint.deleted',
        ],
      );
      assert.deepEqual(events[1].data.changes.description, { from: null, to: 'mirror' });
      assert.equal(events[0].actor.type, 'api_key');
      assert.equal(events[0].actor.id, t.keyId);
      const text = JSON.stringify(events);
      assert.ok(!text.includes(created.secret.slice(6)) && !text.includes(rotated.body.secret.slice(6)));
      assert.ok(!text.includes('"secret"'));
    });

    securityCases(ctx, {
      method: 'POST',
      url: () => '/api/v1/webhook-endpoints',
      body: { url: 'https://hooks.example.com/' },
      crossTenant: false,
    });
    securityCases(ctx, { method: 'GET', url: () => '/api/v1/webhook-endpoints', crossTenant: false });
    const hook = async (c: TestContext, owner: Tenant) =>
      (await createEndpoint(c, owner, { url: 'https://hooks.example.com/', status: 'paused' })).id;
    securityCases(ctx, { method: 'GET', url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}` });
    securityCases(ctx, {
      method: 'PATCH',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}`,
      body: { description: 'x' },
    });
    securityCases(ctx, {
      method: 'DELETE',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}`,
    });
    securityCases(ctx, {
      method: 'POST',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}/rotate-secret`,
      body: {},
    });
    securityCases(ctx, {
      method: 'POST',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}/test`,
    });
    securityCases(ctx, {
      method: 'POST',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}/replay`,
      body: { afterSequence: 0, untilSequence: 1 },
    });
    securityCases(ctx, {
      method: 'GET',
      url: async (c, owner) => `/api/v1/webhook-endpoints/${await hook(c, owner)}/deliveries`,
    });
  },
  webhooks({}),
);

describeEachBackend(
  'webhook delivery',
  (ctx) => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => receiver.close());

    it('delivers each event as the feed shows it, signed per Standard Webhooks (checked with the standardwebhooks package)', async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(204).end();
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['order.*'] });
      const fixture = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, fixture);
      await patchOrder(ctx(), t, order.id, { order: { notes: 'rush' } });
      const got = await receiver.until((r) => r.filter((x) => x.event.resourceId === order.id).length === 2);
      const events = (await feed(ctx(), t)).filter((e) => e.resourceType === 'order');
      const verifier = new Webhook(endpoint.secret);
      for (const [i, delivery] of got.entries()) {
        assert.equal(delivery.body, JSON.stringify(events[i]));
        assert.deepEqual(verifier.verify(delivery.body, delivery.headers), events[i]);
        assert.equal(delivery.headers['webhook-id'], events[i].id);
        assert.ok(Math.abs(Number(delivery.headers['webhook-timestamp']) - Date.now() / 1000) < 30);
      }
      // Tampered body: refused by the reference verifier.
      assert.throws(() => verifier.verify(got[0].body.replace('order.created', 'order.deleted'), got[0].headers));
      const log = await eventually(
        () => deliveries(ctx(), t, endpoint.id),
        (items) => items.every((d) => d.status === 'succeeded'),
      );
      assert.equal(log.length, 2);
      assert.deepEqual(
        log.map((d) => d.sequence),
        events.map((e) => e.sequence),
      );
      assert.equal(log[0].attempts[0].responseStatus, 204);
      assert.equal(log[0].attemptCount, 1);
    });

    it("signs with both secrets during a rotation's grace period, and with the new one only after it", async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(200).end();
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.*'] });
      const rotated = (
        await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, {
          as: t,
          body: { gracePeriodSeconds: 3600 },
        })
      ).body;
      await createItem(ctx(), t, 'Rotated');
      const [during] = await receiver.until((r) => r.length === 1);
      assert.equal(during.headers['webhook-signature'].split(' ').length, 2);
      new Webhook(endpoint.secret).verify(during.body, during.headers);
      new Webhook(rotated.secret).verify(during.body, during.headers);
      const now = (
        await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, {
          as: t,
          body: { gracePeriodSeconds: 0 },
        })
      ).body;
      assert.equal(now.previousSecretExpiresAt, null);
      await createItem(ctx(), t, 'Rotated 2');
      const [, afterwards] = await receiver.until((r) => r.length === 2);
      assert.equal(afterwards.headers['webhook-signature'].split(' ').length, 1);
      new Webhook(now.secret).verify(afterwards.body, afterwards.headers);
      assert.throws(() => new Webhook(rotated.secret).verify(afterwards.body, afterwards.headers));
    });

    it('retries on the schedule, honours Retry-After on 429 and 503, and never follows a redirect', async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res, n) => {
        if (n === 1) res.writeHead(503, { 'retry-after': '2' }).end('busy');
        else if (n === 2)
          res.writeHead(429, { 'retry-after': new Date(Date.now() + 2000).toUTCString() }).end('slow down');
        else if (n === 3) res.writeHead(302, { location: 'http://127.0.0.1:9/elsewhere' }).end();
        else res.writeHead(200).end('fine');
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.created'] });
      await createItem(ctx(), t, 'Retry');
      const got = await receiver.until((r) => r.length === 4, 20_000);
      assert.ok(got[1].at - got[0].at >= 1900, `503 with Retry-After: 2 was retried after ${got[1].at - got[0].at} ms`);
      // An HTTP date 2 s ahead, to the second: at least 1 s.
      assert.ok(
        got[2].at - got[1].at >= 1000,
        `429 with a Retry-After date was retried after ${got[2].at - got[1].at} ms`,
      );
      assert.ok(got[3].at - got[2].at >= 900, `the schedule's 1 s was not kept: ${got[3].at - got[2].at} ms`);
      assert.equal(new Set(got.map((g) => g.headers['webhook-id'])).size, 1);
      const [log] = await eventually(
        () => deliveries(ctx(), t, endpoint.id),
        (items) => items[0]?.status === 'succeeded',
      );
      assert.deepEqual(
        log.attempts.map((a: any) => a.responseStatus),
        [503, 429, 302, 200],
      );
      assert.equal(log.attempts[0].responseBody, 'busy');
      assert.ok(log.attempts[0].nextAttemptAt);
      assert.equal(log.attempts[3].nextAttemptAt, null);
    });

    it('gives up after the last attempt, and a timeout counts as a failure', async () => {
      receiver.received.length = 0;
      receiver.behave = () => {
        /* never answers */
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.created'] });
      await createItem(ctx(), t, 'Slow');
      const [log] = await eventually(
        () => deliveries(ctx(), t, endpoint.id),
        (items) => items[0]?.status === 'failed',
        20_000,
      );
      assert.equal(log.attempts.length, 4);
      assert.match(log.attempts[0].error, /No response within 1500 ms/);
      assert.equal(log.attempts[0].responseStatus, null);
      assert.equal(receiver.received.length, 4);
      const got = (await ctx().request('GET', `/api/v1/webhook-endpoints/${endpoint.id}`, { as: t })).body;
      assert.ok(got.failingSince);
      assert.equal(got.status, 'enabled');
    });

    it('disables the endpoint on 410 Gone, as an event by the service', async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(410).end();
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.*'] });
      await createItem(ctx(), t, 'Gone');
      const got = await eventually(
        () => ctx().request('GET', `/api/v1/webhook-endpoints/${endpoint.id}`, { as: t }),
        (r) => r.body.status === 'disabled',
      );
      assert.equal(got.body.status, 'disabled');
      await createItem(ctx(), t, 'Gone 2');
      const disabled = (await feed(ctx(), t)).find((e) => e.type === 'webhook_endpoint.disabled');
      assert.equal(disabled.actor.type, 'system');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.received.length, 1, 'nothing more is sent to a disabled endpoint');
      const log = await deliveries(ctx(), t, endpoint.id);
      assert.deepEqual(
        log.map((d) => d.status),
        ['failed'],
      );
      // Enabled again, it starts from new events: nothing of the dropped backlog is sent.
      receiver.behave = (_r, res) => {
        res.writeHead(200).end();
      };
      await ctx().request('PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { as: t, body: { status: 'enabled' } });
      await createItem(ctx(), t, 'Gone 3');
      const [, third] = await receiver.until((r) => r.length === 2);
      assert.equal(third.event.data.object.name, 'Gone 3');
    });

    it('replays a sequence range in order, exactly as the feed has it', async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(200).end();
      };
      const t = await ctx().createTenant();
      const fixture = await createFixture(ctx(), t);
      const order = await createOrder(ctx(), t, fixture);
      await patchOrder(ctx(), t, order.id, { order: { notes: 'a' } });
      await patchOrder(ctx(), t, order.id, { order: { notes: 'b' } });
      const all = await feed(ctx(), t);
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['order.*', 'item.*'] });
      const from = all[1].sequence;
      const until = all[all.length - 1].sequence;
      const res = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: from, untilSequence: until },
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const expected = all.filter(
        (e) => e.sequence > from && e.sequence <= until && ['order', 'item'].includes(e.resourceType),
      );
      await receiver.until((r) => r.length === expected.length);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Exactly the feed's events for the range, byte for byte; each resource's in sequence order
      // (different resources go side by side, so their interleaving is free).
      const bySequence = [...receiver.received].sort((a, b) => a.event.sequence - b.event.sequence);
      assert.deepEqual(
        bySequence.map((r) => r.body),
        expected.map((e) => JSON.stringify(e)),
      );
      for (const [resource, sequences] of sequencesByResource(receiver.received)) {
        assert.deepEqual(
          sequences,
          [...sequences].sort((a, b) => a - b),
          `${resource} in order`,
        );
      }
      const log = await deliveries(ctx(), t, endpoint.id);
      assert.ok(log.every((d) => d.replay));
      const bad = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: 5, untilSequence: 5 },
      });
      assert.equal(bad.status, 400);
      const beyond = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: 0, untilSequence: until + 100 },
      });
      assert.equal(beyond.status, 400);
      assert.ok(beyond.body.fieldErrors.untilSequence);
    });

    it('sends a test event to one endpoint, outside the log', async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(200).end();
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['invoice.*'] });
      const before = await feed(ctx(), t);
      const res = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { as: t });
      assert.equal(res.status, 202);
      const [got] = await receiver.until((r) => r.length === 1);
      assert.equal(got.event.type, 'webhook.test');
      assert.equal(got.event.id, res.body.eventId);
      assert.equal(got.event.sequence, null);
      assert.equal(got.event.data.object.id, endpoint.id);
      new Webhook(endpoint.secret).verify(got.body, got.headers);
      assert.equal((await feed(ctx(), t)).length, before.length);
    });

    it("holds a paused endpoint's backlog and sends it, in order, when it is enabled again", async () => {
      receiver.received.length = 0;
      receiver.behave = (_r, res) => {
        res.writeHead(200).end();
      };
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.*'], status: 'paused' });
      for (let i = 0; i < 3; i++) await createItem(ctx(), t, `Held ${i}`);
      // Every answer about the endpoint says it is paused, so a test event or a replay is not a silent wait.
      const test = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { as: t });
      assert.equal(test.body.endpointStatus, 'paused');
      const log = await ctx().request('GET', `/api/v1/webhook-endpoints/${endpoint.id}/deliveries`, { as: t });
      assert.equal(log.body.endpointStatus, 'paused');
      const last = (await feed(ctx(), t)).at(-1).sequence;
      const replay = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: last - 1, untilSequence: last },
      });
      assert.equal(replay.status, 202, JSON.stringify(replay.body));
      assert.equal(replay.body.endpointStatus, 'paused');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.received.length, 0);
      await ctx().request('PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { as: t, body: { status: 'enabled' } });
      // The three items' events, the test event, and the replayed last event.
      const got = await receiver.until((r) => r.length === 5);
      assert.equal(got.filter((r) => r.event.type === 'webhook.test').length, 1);
      const names = got
        .filter((r) => r.event.type === 'item.created')
        .map((r) => r.event.data.object.name)
        .sort();
      assert.deepEqual(names, ['Held 0', 'Held 1', 'Held 2', 'Held 2']);
    });
  },
  webhooks({}),
);

describeEachBackend(
  'webhook order per resource',
  (ctx) => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => receiver.close());

    it("keeps each resource's events in order when every first attempt fails, and a stuck resource holds up no other", async () => {
      receiver.received.length = 0;
      const stuck = new Set<string>();
      const seen = new Set<string>();
      receiver.behave = (r, res) => {
        if (stuck.has(r.event.resourceId)) return void res.writeHead(500).end();
        if (!seen.has(r.event.id)) {
          seen.add(r.event.id);
          return void res.writeHead(500).end('first attempt fails');
        }
        res.writeHead(200).end();
      };
      const t = await ctx().createTenant();
      await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['order.*'] });
      const fixture = await createFixture(ctx(), t);
      const orders: any[] = [];
      for (let i = 0; i < 3; i++) orders.push(await createOrder(ctx(), t, fixture));
      stuck.add(orders[2].id);
      for (const order of orders) {
        await patchOrder(ctx(), t, order.id, { order: { notes: 'one' } });
        await patchOrder(ctx(), t, order.id, { order: { notes: 'two' } });
      }
      const others = (r: { event: any }[]) => r.filter((x) => x.event.resourceId !== orders[2].id);
      // Every event of the other orders delivered (each after one failed attempt), while the stuck one still retries its first.
      await receiver.until((r) => others(r).length === 12, 20_000);
      const events = (await feed(ctx(), t)).filter((e) => e.resourceType === 'order');
      const stuckEvents = events.filter((e) => e.resourceId === orders[2].id).map((e) => e.sequence);
      const stuckAttempts = receiver.received.filter((x) => x.event.resourceId === orders[2].id);
      // ... while the stuck order was still retrying its first event: the others did not wait for it, and its later events did.
      assert.ok(
        stuckAttempts.length >= 2 && stuckAttempts.every((x) => x.event.sequence === stuckEvents[0]),
        "the stuck order's later events wait",
      );
      for (const [key, sequences] of sequencesByResource(others(receiver.received))) {
        const expected = events.filter((e) => `order:${e.resourceId}` === key).map((e) => e.sequence);
        // Each event twice (the failed first attempt, then the retry), never an event before an earlier one.
        assert.deepEqual(
          sequences,
          expected.flatMap((s) => [s, s]),
          key,
        );
      }
      // Once the stuck order's first event has used up its attempts, the next ones go, still in order.
      const all = await receiver.until((r) => r.some((x) => x.event.sequence === stuckEvents[1]), 20_000);
      const stuckSequences = all.filter((x) => x.event.resourceId === orders[2].id).map((x) => x.event.sequence);
      assert.deepEqual(stuckSequences.slice(0, 7), [...Array(6).fill(stuckEvents[0]), stuckEvents[1]]);
    });
  },
  webhooks({ retrySchedule: [0, 1, 1, 1, 1, 1] }),
);

describeEachBackend(
  'webhook endpoints failing for too long',
  (ctx) => {
    it('are paused by the service, never deleted, and keep their backlog', async () => {
      const receiver = await startReceiver((_r, res) => {
        res.writeHead(500).end();
      });
      try {
        const t = await ctx().createTenant();
        const endpoint = await createEndpoint(ctx(), t, { url: receiver.url, eventTypes: ['item.*'] });
        await createItem(ctx(), t, 'Failing');
        const paused = await eventually(
          () => ctx().request('GET', `/api/v1/webhook-endpoints/${endpoint.id}`, { as: t }),
          (r) => r.body.status === 'paused',
          15_000,
        );
        assert.ok(paused.body.failingSince);
        const event = (await feed(ctx(), t)).find((e) => e.type === 'webhook_endpoint.paused');
        assert.equal(event.actor.type, 'system');
        const log = await deliveries(ctx(), t, endpoint.id);
        assert.equal(log[0].status, 'pending', 'the backlog is kept');
        const count = receiver.received.length;
        receiver.behave = (_r, res) => {
          res.writeHead(200).end();
        };
        await ctx().request('PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, {
          as: t,
          body: { status: 'enabled' },
        });
        await receiver.until((r) => r.length > count);
        await eventually(
          () => deliveries(ctx(), t, endpoint.id),
          (items) => items[0].status === 'succeeded',
        );
      } finally {
        await receiver.close();
      }
    });
  },
  webhooks({ retrySchedule: [0, 1, 1, 1, 1, 1, 1], pauseAfterSeconds: 2 }),
);

describeEachBackend(
  'the webhook worker',
  (ctx) => {
    const passes = async () => {
      const metrics = await ctx().app.inject({ method: 'GET', url: '/metrics' });
      const line = metrics.body.split('\n').find((l) => l.startsWith('supplyline_webhook_passes_total '));
      return Number(line?.split(' ')[1]);
    };

    it('is not woken by the commits of a business without an enabled endpoint, and is by those of one with', async () => {
      const quiet = await ctx().createTenant();
      const start = await passes();
      const started = Date.now();
      for (let i = 0; i < 40; i++) await createItem(ctx(), quiet, `Quiet ${i}`);
      const seconds = (Date.now() - started) / 1000;
      const woken = (await passes()) - start;
      // Only the idle pass (once a second) runs; without the watch, each write woke a pass.
      assert.ok(
        woken <= Math.ceil(seconds) + 2,
        `${woken} passes in ${seconds} s for 40 writes of a business without endpoints`,
      );

      const receiver = await startReceiver();
      try {
        receiver.behave = (_r, res) => {
          res.writeHead(204).end();
        };
        const watched = await ctx().createTenant();
        await createEndpoint(ctx(), watched, { url: receiver.url, eventTypes: ['item.created'] });
        const item = await createItem(ctx(), watched, 'Heard at once');
        const got = await eventually(
          async () => receiver.received,
          (r) => r.some((d) => d.event.resourceId === item.id),
          900,
        );
        assert.ok(got.length >= 1);
      } finally {
        await receiver.close();
      }
    });

    it("refreshes PostgreSQL's statistics of the deliveries table (the worker does so after queueing 1,000 events)", async () => {
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: 'https://hooks.example.com/stats', status: 'paused' });
      for (let i = 0; i < 3; i++)
        await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { as: t });
      await analyzeGrownTables(ctx().db, new Map([['webhook_deliveries', 3]]));
      if (ctx().backend !== 'postgres') return;
      const { count } = await ctx()
        .db.selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .executeTakeFirstOrThrow();
      const { rows } = await sql<{
        reltuples: number;
      }>`select reltuples from pg_class where oid = 'webhook_deliveries'::regclass`.execute(ctx().db);
      assert.equal(Number(rows[0].reltuples), Number(count));
    });

    it('sleeps while the only due deliveries belong to a paused endpoint', async () => {
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: 'https://hooks.example.com/held', status: 'paused' });
      // A test event's delivery is pending at once, and waits for the endpoint to be enabled.
      const test = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { as: t });
      assert.equal(test.status, 202, JSON.stringify(test.body));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const start = await passes();
      const started = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const woken = (await passes()) - start;
      const seconds = (Date.now() - started) / 1000;
      // The idle pass only. Counting the paused endpoint's delivery as due made a pass every 5 ms.
      assert.ok(woken <= Math.ceil(seconds) + 2, `${woken} passes in ${seconds} s with nothing to send`);
    });
  },
  webhooks({}),
);

describeEachBackend(
  'webhook replays of purged events',
  (ctx) => {
    it('answers 410 naming the oldest retained sequence, and 400 past the latest', async () => {
      const t = await ctx().createTenant();
      const endpoint = await createEndpoint(ctx(), t, { url: 'https://hooks.example.com/replays', status: 'paused' });
      for (let i = 0; i < 3; i++) await createItem(ctx(), t, `Purged ${i}`);
      await purgeEventsBefore(ctx().db, new Date(Date.now() + 60_000).toISOString());
      await createItem(ctx(), t, 'Kept');
      const fromStart = await ctx().request('GET', '/api/v1/events?after=0', { as: t });
      assert.equal(fromStart.status, 410, 'the feed from 0 is gone too');
      const oldest = Number(/the oldest is (\d+)$/.exec(fromStart.body.message)![1]);
      const latest = (await feed(ctx(), t, oldest - 1)).at(-1).sequence as number;
      assert.equal(latest, oldest, 'one event is kept');
      const gone = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: 0, untilSequence: latest },
      });
      assert.equal(gone.status, 410, JSON.stringify(gone.body));
      assert.match(gone.body.message, new RegExp(`the oldest is ${latest}$`));
      const ok = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: latest - 1, untilSequence: latest },
      });
      assert.equal(ok.status, 202, JSON.stringify(ok.body));
      const past = await ctx().request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/replay`, {
        as: t,
        body: { afterSequence: latest - 1, untilSequence: latest + 1 },
      });
      assert.equal(past.status, 400);
      assert.match(JSON.stringify(past.body), new RegExp(`Must be at most the latest event's sequence, ${latest}`));
    });
  },
  webhooks({}),
);

describeEachBackend(
  'a webhook endpoint whose secret cannot be opened',
  (ctx) => {
    it("holds only its own deliveries: the sending slot is not lost, and another business's events still go", async () => {
      const receiver = await startReceiver();
      try {
        receiver.behave = (_r, res) => {
          res.writeHead(200).end();
        };
        const broken = await ctx().createTenant();
        const endpoint = await createEndpoint(ctx(), broken, { url: receiver.url, eventTypes: ['item.*'] });
        // As after a SECRET_KEY change that dropped the key it was sealed with.
        await ctx()
          .db.updateTable('webhook_endpoints')
          .set({ secret: 'v1.not-a-sealed-secret' })
          .where('id', '=', endpoint.id)
          .execute();
        await createItem(ctx(), broken, 'Never signed');
        await new Promise((resolve) => setTimeout(resolve, 300));
        const healthy = await ctx().createTenant();
        await createEndpoint(ctx(), healthy, { url: receiver.url, eventTypes: ['item.*'] });
        const item = await createItem(ctx(), healthy, 'Signed');
        const got = await receiver.until((r) => r.some((d) => d.event.resourceId === item.id), 8_000);
        assert.ok(!got.some((d) => d.event.data.object.name === 'Never signed'), 'nothing goes unsigned');
      } finally {
        await receiver.close();
      }
    });
  },
  webhooks({ concurrency: 1 }),
);
