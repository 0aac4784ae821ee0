// @supplyline/client against a real server process, on SQLite and (with TEST_DATABASE_URL) PostgreSQL,
// through a proxy that can drop connections and answer 429 and 503.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  createSupplylineClient,
  SupplylineApiError,
  type SupplylineEvent,
  type SupplylineClient,
} from '../../clients/typescript/src/index.ts';
import {
  baseEnv,
  cliCreateBusiness,
  createPgDatabase,
  DELIVERY,
  PG_URL,
  sleep,
  startServer,
  type Server,
  type Tenant,
} from '../reliability/helpers.ts';
import { TYPESCRIPT } from '../helpers/typescript.ts';

type Fault = 'drop-before' | 'drop-after' | '429' | '429-long' | '503' | '409-in-use';

/** Forwards to `target`; each queued fault is used by one request. Counts requests per method and path. */
function faultProxy() {
  const faults: Fault[] = [];
  const seen: string[] = [];
  let target = '';
  const server: HttpServer = createServer((req, res) => {
    seen.push(`${req.method} ${req.url!.split('?')[0]} ${req.headers['idempotency-key'] ?? ''}`);
    const fault = req.url!.startsWith('/api/v1/events') ? undefined : faults.shift();
    if (fault === 'drop-before') {
      req.socket.destroy();
      return;
    }
    if (fault === '429') {
      res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' });
      res.end('{"errorCode":"RATE_LIMITED","message":"slow down"}');
      return;
    }
    if (fault === '429-long') {
      res.writeHead(429, { 'retry-after': '120', 'content-type': 'application/json' });
      res.end('{"errorCode":"RATE_LIMITED","message":"slow down"}');
      return;
    }
    if (fault === '409-in-use') {
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end('{"errorCode":"IDEMPOTENCY_KEY_IN_USE","message":"A request with this Idempotency-Key is in progress"}');
      return;
    }
    if (fault === '503') {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"errorCode":"SERVICE_UNAVAILABLE","message":"busy"}');
      return;
    }
    const upstream = httpRequest(target + req.url, { method: req.method, headers: req.headers }, (up) => {
      if (fault === 'drop-after') {
        up.resume();
        up.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(up.statusCode!, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  return {
    faults,
    seen,
    setTarget(base: string) {
      target = base;
    },
    async listen() {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const backendList = [{ name: 'sqlite' }, ...(PG_URL ? [{ name: 'postgres' }] : [])];

for (const backend of backendList) {
  describe(`@supplyline/client on ${backend.name}`, () => {
    let dir: string;
    let databaseUrl: string;
    let dropDb: (() => Promise<void>) | undefined;
    let server: Server;
    let tenant: Tenant;
    let client: SupplylineClient;
    let proxyBase: string;
    const proxy = faultProxy();
    const start = async () => {
      server = await startServer({ DATABASE_URL: databaseUrl });
      proxy.setTarget(server.base);
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sl-client-'));
      if (backend.name === 'sqlite') databaseUrl = `sqlite:${join(dir, 'db.sqlite')}`;
      else ({ url: databaseUrl, drop: dropDb } = await createPgDatabase());
      await start();
      tenant = await cliCreateBusiness(databaseUrl, 'Client Supplier');
      proxyBase = await proxy.listen();
      client = createSupplylineClient({
        baseUrl: proxyBase,
        businessId: tenant.businessId,
        apiKey: tenant.apiKey,
        retry: { baseDelayMs: 20 },
      });
    });
    after(async () => {
      await server?.stop();
      await proxy.close();
      await dropDb?.();
      rmSync(dir, { recursive: true, force: true });
    });

    let variantId: string;
    let buyerId: string;

    it('creates through dropped connections, 429 and 503 without duplicates, with one Idempotency-Key per call', async () => {
      proxy.faults.push('drop-after', '429', 'drop-before', '503');
      const started = Date.now();
      const item = await client.items.create({
        item: { name: 'Widget' },
        variants: [{ variantName: 'Default', currency: 'AUD', price: 12.5, cost: 4 }],
      } as never);
      assert.ok(Date.now() - started >= 1000, 'Retry-After: 1 was honoured');
      assert.equal(proxy.faults.length, 0);
      const posts = proxy.seen.filter((s) => s.startsWith('POST /api/v1/items'));
      assert.equal(posts.length, 5);
      assert.equal(new Set(posts).size, 1, 'every retry of the call sent the same Idempotency-Key');
      variantId = item.variantIds[0];
      const items = await client.items.page();
      assert.equal(items.total, 1, 'the dropped-after-commit attempt did not create a second item');

      const buyer = await client.buyers.create({ buyer: { name: 'Acme Foods' } } as never);
      buyerId = buyer.id;
      proxy.faults.push('drop-after', '503');
      const order = await client.orders.create(buyerId, {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: variantId, quantity: 2 }],
      } as never);
      assert.equal(order.totalAmount, '25.0000'.slice(0, order.totalAmount.length), 'amounts stay decimal strings');
      assert.equal(typeof order.totalAmount, 'string');
      assert.equal((await client.orders.page()).total, 1);
      const second = await client.orders.create(buyerId, {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: variantId, quantity: 1 }],
      } as never);
      assert.notEqual(second.id, order.id, 'a new call gets a new key');
    });

    it("works unchanged with a sandbox's test key, whose simulated buyer's orders are typed", async () => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [...TYPESCRIPT, 'src/cli.ts', 'sandbox', 'create', '--from', tenant.businessId, '--json'],
        { env: { ...baseEnv, DATABASE_URL: databaseUrl } },
      );
      const made = JSON.parse(stdout);
      const sandbox = createSupplylineClient({ baseUrl: proxyBase, businessId: made.sandboxId, apiKey: made.apiKey });
      assert.match(made.apiKey, /^sl_test_/);
      const orders = await sandbox.sandbox.simulateOrders({ count: 2, lines: 1 });
      assert.equal(orders.length, 2);
      const { data: read } = await sandbox.orders.get(orders[0].id);
      assert.deepEqual((read.properties as { sandbox: { simulated: boolean } }).sandbox.simulated, true);
      assert.equal((await sandbox.orders.page()).total, 2);
      await assert.rejects(client.sandbox.simulateOrders(), (error: unknown) => {
        assert.ok(error instanceof SupplylineApiError);
        assert.equal(error.status, 403);
        return true;
      });
      await assert.rejects(client.orders.get(orders[0].id), (error: unknown) => {
        assert.ok(error instanceof SupplylineApiError);
        assert.equal(error.status, 404);
        return true;
      });
    });

    it('never retries other 4xx, and throws one typed error', async () => {
      const before = proxy.seen.length;
      await assert.rejects(client.items.create({ item: {} } as never), (error: unknown) => {
        assert.ok(error instanceof SupplylineApiError);
        assert.equal(error.status, 400);
        assert.equal(error.errorCode, 'VALIDATION_ERROR');
        assert.ok(error.fieldErrors && Object.keys(error.fieldErrors).length > 0);
        assert.match(error.requestId ?? '', /.+/);
        return true;
      });
      await assert.rejects(
        client.orders.get('ord_00000000000000000000000000'),
        (error: unknown) =>
          error instanceof SupplylineApiError && error.status === 404 && error.errorCode === 'NOT_FOUND',
      );
      assert.equal(proxy.seen.length - before, 2, 'one attempt each');
      const stranger = createSupplylineClient({ baseUrl: proxyBase, businessId: tenant.businessId, apiKey: 'wrong' });
      await assert.rejects(
        stranger.orders.page(),
        (error: unknown) => error instanceof SupplylineApiError && error.status === 401,
      );
    });

    it('retries a 409 IDEMPOTENCY_KEY_IN_USE with the same key, and returns a 429 whose Retry-After is longer than it may wait', async () => {
      proxy.faults.push('409-in-use');
      const before = proxy.seen.length;
      const buyer = await client.buyers.create({ buyer: { name: 'Retried Foods' } } as never);
      assert.match(buyer.id, /^phm_/);
      const posts = proxy.seen.slice(before).filter((s) => s.startsWith('POST /api/v1/buyers'));
      assert.equal(posts.length, 2);
      assert.equal(new Set(posts).size, 1, 'the retry sent the same Idempotency-Key');

      proxy.faults.push('429-long');
      const started = Date.now();
      const seen = proxy.seen.length;
      await assert.rejects(
        client.items.page(),
        (error: unknown) => error instanceof SupplylineApiError && error.status === 429,
      );
      assert.ok(Date.now() - started < 5000, 'did not wait out, nor cut short, a Retry-After of 120 s');
      assert.equal(proxy.seen.length - seen, 1, 'not retried sooner than the server asked');
    });

    it('cuts off an attempt that outlives the total time', async () => {
      const hanging = createServer(() => {
        /* never answers */
      });
      await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
      try {
        const slow = createSupplylineClient({
          baseUrl: `http://127.0.0.1:${(hanging.address() as { port: number }).port}`,
          businessId: tenant.businessId,
          apiKey: tenant.apiKey,
          timeout: 500,
          retry: { baseDelayMs: 10 },
        });
        const started = Date.now();
        await assert.rejects(slow.items.page());
        assert.ok(Date.now() - started < 3000, `ended after ${Date.now() - started} ms`);
      } finally {
        hanging.closeAllConnections();
        await new Promise<void>((r) => hanging.close(() => r()));
      }
    });

    it("manages webhook endpoints and reads each resource's history", async () => {
      // https://localhost: accepted when saved (a name), refused at delivery (it resolves to loopback): nothing leaves the machine.
      const created = await client.webhookEndpoints.create({
        url: 'https://localhost/supplyline',
        eventTypes: ['item.*'],
      } as never);
      assert.match(created.secret, /^whsec_/);
      const read = await client.webhookEndpoints.get(created.id);
      assert.equal(read.data.status, 'enabled');
      assert.ok(!('secret' in (read.data as object)));
      const ids: string[] = [];
      for await (const endpoint of client.webhookEndpoints.list()) ids.push(endpoint.id);
      assert.ok(ids.includes(created.id));
      const rotated = await client.webhookEndpoints.rotateSecret(created.id, { gracePeriodSeconds: 60 });
      assert.notEqual(rotated.secret, created.secret);
      assert.equal((await client.webhookEndpoints.test(created.id)).endpointStatus, 'enabled');
      const item = await client.items.create({
        item: { name: 'Historied' },
        variants: [{ variantName: 'One', currency: 'AUD', price: 2, cost: 1 }],
      } as never);
      await client.items.patch(item.id, { name: 'Historied, renamed' });
      const history: string[] = [];
      for await (const event of client.items.events(item.id)) history.push(event.type);
      assert.deepEqual(history, ['item.created', 'item.updated']);
      const last = (await client.events.list({ after: 0, limit: 1000 })).lastSequence;
      const replay = await client.webhookEndpoints.replay(created.id, { afterSequence: 0, untilSequence: last });
      assert.equal(replay.untilSequence, last);
      let tests = 0;
      for (let i = 0; i < 100 && tests === 0; i++) {
        for await (const delivery of client.webhookEndpoints.deliveries(created.id))
          if (delivery.eventType === 'webhook.test') tests++;
        if (tests === 0) await sleep(50);
      }
      assert.equal(tests, 1, 'the test event is in the delivery log');
      const paused = await client.webhookEndpoints.patch(created.id, { status: 'paused' } as never);
      assert.equal(paused.data.status, 'paused');
      await client.webhookEndpoints.delete(created.id);
      await assert.rejects(
        client.webhookEndpoints.get(created.id),
        (error: unknown) => error instanceof SupplylineApiError && error.status === 404,
      );
    });

    it('exposes the ETag and sends If-Match on patches', async () => {
      const [order] = await client.orders.page().then((p) => p.items);
      const read = await client.orders.get(order.id);
      assert.ok(read.etag);
      const patched = await client.orders.patch(order.id, { order: { notes: 'first' } }, { ifMatch: read.etag });
      assert.notEqual(patched.etag, read.etag);
      await assert.rejects(
        client.orders.patch(order.id, { order: { notes: 'second' } }, { ifMatch: read.etag }),
        (error: unknown) => error instanceof SupplylineApiError && error.status === 412,
      );
      // Items, buyers and webhook endpoints have no ETag: their patch takes no ifMatch (typecheck), and the server refuses one (412).
      // @ts-expect-error no ifMatch where there is no ETag
      const unguarded = () => client.items.patch('itm_x', { name: 'x' }, { ifMatch: read.etag });
      assert.equal(typeof unguarded, 'function');
    });

    it('iterates every list to its total', async () => {
      for (let i = 0; i < 6; i++)
        await client.items.create({
          item: { name: `Widget ${i}` },
          variants: [{ variantName: 'Default', currency: 'AUD', price: 1, cost: 1 }],
        } as never);
      const ids: string[] = [];
      for await (const item of client.items.list({ limit: 3 })) ids.push(item.id);
      assert.equal(ids.length, (await client.items.page()).total);
      assert.equal(new Set(ids).size, ids.length);
      const orders = [];
      for await (const order of client.orders.list({ phase: 'ACTIVE', limit: 1 })) orders.push(order);
      assert.equal(orders.length, (await client.orders.page({ phase: 'ACTIVE' })).total);
      for (const resource of [client.buyers, client.priceLists, client.invoices] as const) {
        let count = 0;
        for await (const _ of (resource as typeof client.buyers).list({ limit: 2 })) count++;
        assert.equal(count, (await (resource as typeof client.buyers).page()).total);
      }
    });

    it('acknowledges, ships, voids and iterates shipments', async () => {
      const order = await client.orders.create(buyerId, {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: variantId, quantity: 3 }],
      } as never);
      const line = order.orderItems[0].id;
      const ack = await client.acknowledgements.create(order.id, {
        lines: [{ orderItemId: line, decision: 'QUANTITY_CHANGED', quantity: 2 }],
      });
      assert.equal(ack.decision, 'ACCEPTED_WITH_CHANGES');
      assert.deepEqual(
        (await client.acknowledgements.list(order.id)).map((a) => a.id),
        [ack.id],
      );
      const made = [];
      for (let i = 0; i < 2; i++)
        made.push(await client.shipments.create(order.id, { lines: [{ orderItemId: line, quantity: 1 }] }));
      await assert.rejects(
        client.shipments.create(order.id, { lines: [{ orderItemId: line, quantity: 1 }] }),
        (error: unknown) => error instanceof SupplylineApiError && error.status === 409,
      );
      assert.equal((await client.shipments.void(made[0].id)).status, 'VOIDED');
      const seen = [];
      for await (const s of client.shipments.list({ orderId: order.id, limit: 1 })) seen.push(s.id);
      assert.deepEqual(seen, made.map((s) => s.id).reverse());
      const history = [];
      for await (const e of client.shipments.events(made[0].id)) history.push(e.type);
      assert.deepEqual(history, ['shipment.created', 'shipment.voided']);
      // The later tests count the orders.
      await client.orders.delete(order.id);
    });

    it('iterates by cursor: items created and deleted meanwhile neither repeat nor hide the others', async () => {
      // Items of this test's own, found by a property, so that the others' stay.
      const make = (name: string) =>
        client.items.create({
          item: { name, properties: { walk: true } },
          variants: [{ variantName: 'Default', currency: 'AUD', price: 1, cost: 1 }],
        } as never);
      for (let i = 0; i < 8; i++) await make(`Walk ${i}`);
      const before: string[] = [];
      for await (const item of client.items.list({ propertyPath: 'walk', limit: 100 })) before.push(item.id);
      const seen: string[] = [];
      let n = 0;
      for await (const item of client.items.list({ propertyPath: 'walk', limit: 2 })) {
        seen.push(item.id);
        // Between pages: a new item (newer than the walk's place), and every other time an item already passed deleted.
        if (seen.length % 2 === 0) {
          await make(`During ${n++}`);
          if (n % 2 === 0) await client.items.delete(seen[seen.length - 1]);
        }
      }
      assert.equal(new Set(seen).size, seen.length, 'no item twice');
      assert.deepEqual(seen, before, 'every item there at the start, once, in list order');
    });

    it('follows the feed across a server restart and misses nothing', async () => {
      const stop = new AbortController();
      const seen: SupplylineEvent[] = [];
      const checkpoints: number[] = [];
      const errors: unknown[] = [];
      const following = (async () => {
        for await (const event of client.events.follow({
          after: 0,
          signal: stop.signal,
          waitSeconds: 1,
          onCheckpoint: (s) => {
            checkpoints.push(s);
          },
          onError: (e) => errors.push(e),
        }))
          seen.push(event);
      })();
      const [order] = await client.orders.page().then((p) => p.items);
      await client.orders.patch(order.id, { order: { notes: 'before restart' } });
      await server.kill();
      await sleep(300);
      await start();
      for (let i = 0; i < 3; i++) await client.orders.patch(order.id, { order: { notes: `after restart ${i}` } });
      const last = (await client.events.list({ after: 0, limit: 1000 })).lastSequence;
      for (let i = 0; i < 200 && (seen.at(-1)?.sequence ?? 0) < last; i++) await sleep(50);
      stop.abort();
      await following;
      assert.deepEqual(
        seen.map((e) => e.sequence),
        Array.from({ length: last }, (_, i) => i + 1),
        'every event once, in order',
      );
      assert.ok(errors.length > 0, 'the restart was noticed');
      assert.equal(checkpoints.at(-1), last);
    });

    it('reports a gap in the feed as a resynchronisation error', async () => {
      const { ResyncRequiredError } = await import('../../clients/typescript/src/errors.ts');
      const skipping = createSupplylineClient({
        baseUrl: proxyBase,
        businessId: tenant.businessId,
        apiKey: tenant.apiKey,
        // A feed that lost event 2: the client must notice rather than silently skip it.
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (!new Request(input, init).url.includes('/api/v1/events')) return response;
          const page = (await response.json()) as { items: SupplylineEvent[] };
          page.items = page.items.filter((e) => e.sequence !== 2);
          return Response.json(page);
        },
      });
      await assert.rejects(
        async () => {
          for await (const _ of skipping.events.follow({ after: 0 })) {
            /* read */
          }
        },
        (error: unknown) => error instanceof ResyncRequiredError && error.reason === 'gap' && error.after === 1,
      );
    });

    it('reports a checkpoint past the feed (409, another business or a restored database) as a resynchronisation error', async () => {
      const { ResyncRequiredError } = await import('../../clients/typescript/src/errors.ts');
      await assert.rejects(
        async () => {
          for await (const _ of client.events.follow({ after: 1_000_000, waitSeconds: 1 })) {
            /* read */
          }
        },
        (error: unknown) =>
          error instanceof ResyncRequiredError && error.reason === 'ahead' && error.after === 1_000_000,
      );
    });

    it('reports a feed below the retained range (410) as a resynchronisation error', async () => {
      const { ResyncRequiredError } = await import('../../clients/typescript/src/errors.ts');
      const purged = createSupplylineClient({
        baseUrl: proxyBase,
        businessId: tenant.businessId,
        apiKey: tenant.apiKey,
        fetch: async (input, init) => {
          if (!new Request(input, init).url.includes('/api/v1/events')) return fetch(input, init);
          return Response.json(
            { errorCode: 'GONE', message: 'Events up to 40 are no longer retained; the oldest is 41' },
            { status: 410 },
          );
        },
      });
      await assert.rejects(
        async () => {
          for await (const _ of purged.events.follow({ after: 3 })) {
            /* read */
          }
        },
        (error: unknown) => error instanceof ResyncRequiredError && error.reason === 'gone' && error.after === 3,
      );
    });

    it('exports then follows: the mirror-orders example ends equal to the server', async () => {
      const file = join(dir, 'mirror.json');
      const env = {
        ...baseEnv,
        SUPPLYLINE_URL: server.base,
        SUPPLYLINE_BUSINESS_ID: tenant.businessId,
        SUPPLYLINE_API_KEY: tenant.apiKey,
      };
      const runExample = () =>
        promisify(execFile)(
          process.execPath,
          ['--conditions=supplyline-source', ...TYPESCRIPT, 'examples/mirror-orders.ts', file],
          { env },
        );
      const first = await runExample();
      assert.match(first.stdout, /loaded 2 orders from the export/);
      assert.match(first.stdout, /in sync: 2 orders/);
      const [order] = await client.orders.page().then((p) => p.items);
      await client.orders.patch(order.id, { order: { notes: 'while away' } });
      await client.orders.delete((await client.orders.page()).items[1].id);
      // A catalogue change between runs: the mirror's orders keep what they sold, as the server's do.
      const itemId = order.orderItems[0].itemListEntry.itemVariant.itemId;
      await client.items.patch(itemId, {
        updateVariants: [{ id: variantId, variantName: 'Renamed while away', sku: 'MIRROR-2' }],
      });
      await client.orders.create(buyerId, {
        expectedDeliveryAt: DELIVERY,
        orderItems: [{ itemVariantId: variantId, quantity: 3 }],
      } as never);
      const second = await runExample();
      assert.doesNotMatch(second.stdout, /loaded/, 'the second run resumes from the feed');
      assert.match(second.stdout, /in sync: 2 orders/);
      const mirror = JSON.parse(readFileSync(file, 'utf8'));
      assert.equal(mirror.orders[order.id].notes, 'while away');
    });

    it('the mirror example appends each checkpoint to a journal, and a second Ctrl-C does not cut its final check short', async () => {
      const file = join(dir, 'mirror.json');
      const env = {
        ...baseEnv,
        SUPPLYLINE_URL: server.base,
        SUPPLYLINE_BUSINESS_ID: tenant.businessId,
        SUPPLYLINE_API_KEY: tenant.apiKey,
      };
      const child = spawn(
        process.execPath,
        ['--conditions=supplyline-source', ...TYPESCRIPT, 'examples/mirror-orders.ts', file, '--follow'],
        { env },
      );
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        const snapshot = readFileSync(file, 'utf8');
        const [order] = await client.orders.page().then((p) => p.items);
        await client.orders.patch(order.id, { order: { notes: 'journalled' } });
        for (
          let i = 0;
          i < 200 && !(existsSync(`${file}.journal`) && readFileSync(`${file}.journal`, 'utf8').includes('journalled'));
          i++
        )
          await sleep(50);
        assert.match(
          readFileSync(`${file}.journal`, 'utf8'),
          /journalled/,
          'the checkpoint appended the changed order',
        );
        assert.equal(readFileSync(file, 'utf8'), snapshot, 'and left the snapshot as it was');
        child.kill('SIGINT');
        child.kill('SIGINT');
        assert.equal(await exited, 0, out);
      } finally {
        child.kill('SIGKILL');
      }
      assert.match(out, /in sync: 2 orders/);
      assert.ok(!existsSync(`${file}.journal`), 'the journal was folded into the snapshot');
      assert.equal(
        JSON.parse(readFileSync(file, 'utf8')).orders[
          (await client.orders.page()).items.find((o) => o.notes === 'journalled')!.id
        ].notes,
        'journalled',
      );
    });
  });
}
