import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { createApp } from '../../src/app.ts';
import { createDatabase } from '../../src/db/connection.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { createWriteRunner, type WriteRunner } from '../../src/write/runner.ts';
import { describeEachBackend } from '../helpers/context.ts';

/**
 * The webhook worker stops before the database may close: when the app's close resolves, no write
 * of the worker runs or starts (a pass queueing from the log, a claim, outcomes). The server closes
 * the database right after (src/server.ts); a write then failed with "driver has already been
 * destroyed" (issue 44).
 */
describeEachBackend('webhook worker at shutdown', (ctx) => {
  it("finishes its pass and claim, and records nothing more, before the app's close resolves", async () => {
    const t = await ctx().createTenant();
    // Slower than the worker waits for deliveries in flight (3 s): they end after the close.
    const receiver = createServer((_req, res) => setTimeout(() => res.end('ok'), 3_500).unref());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const handle = createDatabase(ctx().database.url, { schema: ctx().database.schema });
    const box = new SecretBox([randomBytes(32)]);
    const real = createWriteRunner(handle.db, { box });
    let active = 0;
    let closed = false;
    const late: string[] = [];
    // Every write of this app is slow, so that the worker is mid-write when the close begins.
    const slow = <T>(run: () => Promise<T>): Promise<T> => {
      if (closed) late.push('a write started after the close');
      active++;
      return new Promise((resolve) => setTimeout(resolve, 40)).then(run).finally(() => {
        active--;
        if (closed) late.push('a write ended after the close');
      });
    };
    const writes: WriteRunner = {
      run: (scope, work) => slow(() => real.run(scope, work)),
      runIdempotent: (scope, key, work) => slow(() => real.runIdempotent(scope, key, work)),
    };
    const config = {
      ...ctx().config,
      webhooks: { ...ctx().config.webhooks, workers: true, allowPrivateNetworks: true, concurrency: 4 },
    };
    const app = await createApp({ db: handle.db, config, rateLimiter: null, writes, secretBox: box });
    try {
      await app.ready();
      const send = (method: string, url: string, body: unknown) =>
        app.inject({
          method: method as 'POST',
          url,
          headers: { ...t.headers, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      const hook = await send('POST', '/api/v1/webhook-endpoints', {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`,
      });
      assert.equal(hook.statusCode, 201, hook.body);
      for (let i = 0; i < 12; i++)
        assert.equal((await send('POST', '/api/v1/buyers', { buyer: { name: `B${i}` } })).statusCode, 201);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // One more write as the close begins: it wakes the worker, whose pass is then under way.
      assert.equal((await send('POST', '/api/v1/buyers', { buyer: { name: 'Last' } })).statusCode, 201);
      await app.close();
      closed = true;
      if (active > 0) late.push(`${active} write(s) still running when the close resolved`);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      assert.deepEqual(late, []);
    } finally {
      closed = false;
      receiver.closeAllConnections();
      receiver.close();
      await handle.close();
    }
  });
});
